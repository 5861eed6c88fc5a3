/**
 * @module gateways/mcp/call-slots
 * What one login may ask of the MCP gateway at once, checked when an HTTP request
 * brings its JSON-RPC messages, before any of them runs: a batch holds at most
 * `maxBatch` messages, and a login has at most `perSubject` calls that do storage work
 * (tools/call, resources/read, resources/list) running, all its sessions and requests
 * together; a request that would pass either bound is refused whole, with a JSON-RPC
 * error, and nothing of it runs. (Two batches of 100 `find` calls once queued 272 pool
 * tasks from one login, and every other user timed out behind them.)
 */

/** The methods that act on the storage. */
const WORK = new Set(['tools/call', 'resources/read', 'resources/list'])

/** The messages of a request body and how many of them do storage work; null: not JSON (the transport answers it). */
export function workOf(body: string): { readonly messages: number; readonly calls: number; readonly batch: boolean } | null {
  let v: unknown
  try {
    v = JSON.parse(body)
  } catch {
    return null
  }
  const all = Array.isArray(v) ? v : [v]
  let calls = 0
  for (const m of all) {
    const method = (m as { method?: unknown } | null)?.method
    if (typeof method === 'string' && WORK.has(method) && (m as { id?: unknown }).id !== undefined) calls++
  }
  return { messages: all.length, calls, batch: Array.isArray(v) }
}

export class CallSlots {
  readonly #perSubject: number
  readonly #maxBatch: number
  readonly #running = new Map<string, number>()

  constructor(limits: { readonly perSubject: number; readonly maxBatch: number }) {
    this.#perSubject = limits.perSubject
    this.#maxBatch = limits.maxBatch
  }

  /** Calls of `subject` running now (for tests and figures). */
  running(subject: string): number {
    return this.#running.get(subject) ?? 0
  }

  /**
   * Takes the slots a body's calls need. @returns the release (call it once the request
   * is answered), or why the request is refused: a JSON-RPC error code and message.
   */
  take(subject: string, work: { readonly messages: number; readonly calls: number; readonly batch: boolean }): (() => void) | { readonly code: number; readonly message: string; readonly status: number } {
    if (work.batch && work.messages > this.#maxBatch) {
      return { status: 400, code: -32600, message: `a JSON-RPC batch may hold at most ${this.#maxBatch} messages; this one has ${work.messages}: send fewer at once` }
    }
    if (work.calls === 0) return () => {}
    const now = this.running(subject)
    if (now + work.calls > this.#perSubject) {
      return {
        status: 429,
        code: -32000,
        message:
          work.calls > this.#perSubject
            ? `this request holds ${work.calls} tool calls; a login may have at most ${this.#perSubject} running at once: send fewer at a time`
            : `this login has ${now} tool calls running (at most ${this.#perSubject} at once): wait for their answers, then try again`,
      }
    }
    this.#running.set(subject, now + work.calls)
    let held = true
    return () => {
      if (!held) return
      held = false
      const left = this.running(subject) - work.calls
      if (left > 0) this.#running.set(subject, left)
      else this.#running.delete(subject)
    }
  }
}
