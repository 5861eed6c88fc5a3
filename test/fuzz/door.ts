/**
 * What every door's properties share: a named fast-check property (with its share of
 * the cases in a long run), the door holding them, and the frame of one case: the planted links restored
 * first, the outside checked unchanged after.
 */
import type fc from 'fast-check'
import { expect, outsideChanged, outsideState } from './invariants.js'
import type { World } from './world.js'

export interface Property {
  readonly name: string
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly property: fc.IAsyncProperty<any>
  /** Its share of the cases in `npm run fuzz` (relative to the door's other properties). */
  readonly weight: number
  /** Fewer cases in the CI subset than the door's default (a property whose cases wait, as refused logins do). */
  readonly ciRuns?: number
}

/** A door's properties, on its clients (logged in once, reused by every case). */
export interface Door {
  readonly properties: readonly Property[]
  /** Throws unless the door still serves: a fresh login, a request that must succeed. */
  alive?(): Promise<void>
  close?(): Promise<void>
}

const baselines = new WeakMap<World, string>()

/** Runs one case: replants the links, runs it, then checks that nothing outside the root changed. */
export async function checkCase(w: World, run: () => Promise<void>): Promise<void> {
  let before = baselines.get(w)
  if (before === undefined) baselines.set(w, (before = outsideState(w)))
  w.replant()
  await run()
  const changed = outsideChanged(w, before)
  expect(changed === null, changed!)
}

/** Outcomes by door and kind (status codes, error codes), shown by `npm run fuzz` with FUZZ_STATS=1: what the cases reached. */
export const outcomes = new Map<string, number>()
export function tally(label: string): void {
  outcomes.set(label, (outcomes.get(label) ?? 0) + 1)
}
