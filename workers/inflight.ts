/**
 * @module workers/inflight
 * Requests in flight, written once. Request/response protocols (SFTP, SMB, S3's
 * parts) are bounded by latency with one request at a time; these keep several
 * going while bounding memory, and make sure that no request's failure goes
 * unobserved (an unhandled rejection would take the worker thread down).
 *
 * - `InFlight`: an unordered window (writes: each request carries its own offset or
 *   part number); the first failure is kept and thrown by the next `below`/`all`.
 * - `ReadAhead`: an ordered queue of replies (reads: consumed in request order).
 * - `inParallel`: a fixed list of tasks with at most n running.
 */

/** Unordered requests in flight; remembers the first failure. */
export class InFlight {
  readonly #pending = new Set<Promise<void>>()
  #error: { readonly err: unknown } | null = null

  /** Requests not yet settled. */
  get size(): number {
    return this.#pending.size
  }

  add(p: Promise<unknown>): void {
    const tracked: Promise<void> = p.then(
      () => void this.#pending.delete(tracked),
      (err: unknown) => {
        this.#pending.delete(tracked)
        this.#error ??= { err }
      },
    )
    this.#pending.add(tracked)
  }

  /** Waits until fewer than `n` are in flight. @throws the first failure */
  async below(n: number): Promise<void> {
    this.#check()
    while (this.#pending.size >= n) {
      await Promise.race(this.#pending)
      this.#check()
    }
  }

  /** Waits for every request. @throws the first failure */
  async all(): Promise<void> {
    while (this.#pending.size > 0) await Promise.race(this.#pending)
    this.#check()
  }

  /** Waits for every request, ignoring failures (on the way out after an error). */
  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.race(this.#pending)
  }

  #check(): void {
    if (this.#error !== null) throw this.#error.err
  }
}

/**
 * Replies awaited in request order. A queued promise that rejects is observed at
 * once (no unhandled rejection) and throws when its turn comes; one dropped unread
 * (the consumer stopped) is simply forgotten.
 */
export class ReadAhead<T> {
  #queue: Promise<T>[] = []

  get length(): number {
    return this.#queue.length
  }

  /** Queues a reply at the end. */
  push(p: Promise<T>): void {
    p.catch(() => {})
    this.#queue.push(p)
  }

  /** The oldest reply; undefined when none is queued. */
  shift(): Promise<T> | undefined {
    return this.#queue.shift()
  }
}

/** Runs `fn` over `items` with at most `n` in flight; the first failure rejects (after running tasks stop being started). */
export async function inParallel<T>(n: number, items: readonly T[], fn: (x: T, index: number) => Promise<unknown>): Promise<void> {
  let next = 0
  let failed = false
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const i = next++
      try {
        await fn(items[i]!, i)
      } catch (err) {
        failed = true
        throw err
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker))
}
