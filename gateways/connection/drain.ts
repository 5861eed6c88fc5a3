/**
 * @module gateways/connection/drain
 * The one shutdown drain (core/doors.ts, `DoorDrain`). Every door registers its parts:
 * the HTTP API's listener, each gateway's listener or session table. A shutdown
 * (`Drain.run`) stops every part from accepting at once, then each part drains on its
 * own to the same deadline: as soon as a part has nothing in flight it ends its
 * sessions (an idle MCP session does not wait for a long HTTP download); at the
 * deadline, whatever is still in flight is ended, its open handles aborted (nothing
 * half written: a handle commits only at its close).
 *
 * A gateway stopped on its own (`DrainRegistration.stop`) drains its part alone, the
 * same way; each step runs once, so a stop after the shutdown's drain does nothing.
 */
import type { DoorDrain, DrainPart, DrainRegistration } from '../../core/doors.js'

/** How often busy parts are looked at while they drain. */
const POLL_MS = 20

export interface DrainResult {
  /** The parts that still had work in flight at the deadline, with how much. */
  readonly cut: readonly { readonly name: string; readonly busy: number }[]
}

/** A part whose steps run once each, however many drains reach it. */
class Once {
  readonly part: DrainPart
  #stopped = false
  #ended: Promise<void> | null = null

  constructor(part: DrainPart) {
    this.part = part
  }

  stopAccepting(): void {
    if (this.#stopped) return
    this.#stopped = true
    this.part.stopAccepting()
  }

  get ended(): boolean {
    return this.#ended !== null
  }

  end(): Promise<void> {
    this.#ended ??= Promise.resolve()
      .then(() => this.part.end())
      .catch(() => {})
    return this.#ended
  }
}

export class Drain implements DoorDrain {
  readonly #parts = new Set<Once>()

  register(part: DrainPart): DrainRegistration {
    const once = new Once(part)
    this.#parts.add(once)
    return {
      stop: async (graceMs) => {
        await drainParts([once], graceMs)
        this.#parts.delete(once)
      },
    }
  }

  /** Stops every door at once and drains them all to `graceMs` from now. */
  async run(graceMs: number): Promise<DrainResult> {
    const parts = [...this.#parts]
    this.#parts.clear()
    return drainParts(parts, graceMs)
  }
}

async function drainParts(parts: readonly Once[], graceMs: number): Promise<DrainResult> {
  const deadline = Date.now() + Math.max(0, graceMs)
  for (const p of parts) p.stopAccepting()
  const cut: { name: string; busy: number }[] = []
  await Promise.all(
    parts.map(async (p) => {
      while (!p.ended) {
        p.part.closeIdle?.()
        const busy = p.part.busy()
        if (busy === 0) break
        const left = deadline - Date.now()
        if (left <= 0) {
          cut.push({ name: p.part.name, busy })
          break
        }
        await new Promise((r) => setTimeout(r, Math.min(POLL_MS, left)))
      }
      await p.end()
    }),
  )
  return { cut }
}
