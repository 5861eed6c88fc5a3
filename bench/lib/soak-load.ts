/**
 * @module bench/lib/soak-load
 * The two ways the soak drives its mix of operations (lib/soak-doors.ts):
 * - `closedLoop`: N clients, each starting the next operation as soon as its last one
 *   ended: what the server does flat out (the peak);
 * - `paced`: operations started at a fixed rate (open loop: the schedule does not wait
 *   for slow answers), walking the mix in order, at most `maxInFlight` at once (a
 *   server that falls behind shows as the schedule's lag, not as a lower rate chosen
 *   in silence).
 * Both count every operation, its time and its errors by name.
 */
import type { Op } from './soak-doors.js'

export interface Tally {
  ops: number
  bytes: number
  errors: number
  /** The first errors' messages (at most 10). */
  readonly firstErrors: string[]
  /** Milliseconds per operation, by operation name. */
  readonly ms: Map<string, number[]>
  readonly errorsByOp: Map<string, number>
}

export const newTally = (): Tally => ({ ops: 0, bytes: 0, errors: 0, firstErrors: [], ms: new Map(), errorsByOp: new Map() })

async function runOp(op: Op, tally: Tally): Promise<void> {
  const t0 = performance.now()
  try {
    await op.run()
    tally.ops++
    tally.bytes += op.bytes
    const list = tally.ms.get(op.name) ?? []
    list.push(performance.now() - t0)
    tally.ms.set(op.name, list)
  } catch (err) {
    tally.errors++
    tally.errorsByOp.set(op.name, (tally.errorsByOp.get(op.name) ?? 0) + 1)
    if (tally.firstErrors.length < 10) tally.firstErrors.push(`${op.name}: ${(err as Error)?.message ?? String(err)}`)
  }
}

/** `clients` loops over `mix` (each from its own offset) for `seconds`; returns the tally and the wall seconds. */
export async function closedLoop(mix: readonly Op[], clients: number, seconds: number): Promise<{ tally: Tally; wallS: number }> {
  const tally = newTally()
  const t0 = performance.now()
  const end = t0 + seconds * 1000
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let i = Math.floor((c * mix.length) / clients); performance.now() < end; i++) await runOp(mix[i % mix.length]!, tally)
    }),
  )
  return { tally, wallS: (performance.now() - t0) / 1000 }
}

export interface Paced {
  readonly tally: Tally
  readonly wallS: number
  /** The most the schedule ran late (waiting for a free slot), seconds. */
  readonly maxLagS: number
}

/**
 * Starts `mix[i % mix.length]` at `rate` per second for `seconds`, at most `maxInFlight`
 * at once; `tally` can be read while it runs. `done` resolves once the last operation
 * ended.
 */
export function paced(mix: readonly Op[], rate: number, seconds: number, maxInFlight: number): { done: Promise<Paced>; tally: Tally } {
  const tally = newTally()
  let i = 0
  const done = (async (): Promise<Paced> => {
    const t0 = performance.now()
    const end = t0 + seconds * 1000
    const inFlight = new Set<Promise<void>>()
    let maxLagS = 0
    for (;;) {
      const due = t0 + (i * 1000) / rate
      if (due >= end) break
      const wait = due - performance.now()
      if (wait > 0) await new Promise((r) => setTimeout(r, wait))
      while (inFlight.size >= maxInFlight) await Promise.race(inFlight)
      // A server that fell behind does not get the missed operations after the end.
      if (performance.now() >= end) break
      maxLagS = Math.max(maxLagS, (performance.now() - due) / 1000)
      const p = runOp(mix[i % mix.length]!, tally).finally(() => inFlight.delete(p))
      inFlight.add(p)
      i++
    }
    await Promise.all(inFlight)
    return { tally, wallS: (performance.now() - t0) / 1000, maxLagS }
  })()
  return { done, tally }
}
