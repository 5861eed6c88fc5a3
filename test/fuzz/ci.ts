/**
 * The fixed-seed subset of the fuzzer for `npm test` (test/fuzz/*.test.ts): each door's
 * properties with a few cases each, on a world of its own, then the service checked
 * alive. The same properties run by the hundred thousand with `npm run fuzz`.
 */
import fc from 'fast-check'
import type { Test } from 'tap'
import type { Door } from './door.js'
import { alive, report } from './invariants.js'
import { closeConnections } from './raw-http.js'
import { type World, startWorld } from './world.js'

/** The seed of the CI subset: fixed, so a failure is the same on every run. */
export const CI_SEED = 20261125

export async function fuzzInTap(t: Test, open: (w: World) => Promise<Door>, runsPerProperty: number): Promise<void> {
  const w = await startWorld()
  const door = await open(w)
  t.teardown(async () => {
    await door.close?.()
    closeConnections()
    await w.close()
  })
  for (const p of door.properties) {
    await t.test(p.name, async (t) => {
      const details = await fc.check(p.property, { seed: CI_SEED, numRuns: p.ciRuns ?? runsPerProperty })
      t.notOk(details.failed, details.failed ? report(details) : `${details.numRuns} cases`)
      await alive(w)
      await door.alive?.()
      t.pass('alive after the batch')
    })
  }
}
