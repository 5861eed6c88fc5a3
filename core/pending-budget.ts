/**
 * @module core/pending-budget
 * Bytes written and not yet taken: past `limit`, writes wait (the protocol's own flow
 * control then slows the client). Used on both sides of a handle's port: the main
 * thread's view counts the bytes it sent to its handles' actors and not yet credited
 * (all handles together), an actor the bytes waiting for its driver.
 */
export class PendingBudget {
  readonly limit: number
  #bytes = 0
  #waiters: (() => void)[] = []

  constructor(limit: number) {
    this.limit = limit
  }

  get bytes(): number {
    return this.#bytes
  }

  add(n: number): void {
    this.#bytes += n
    if (n < 0 && this.hasRoom() && this.#waiters.length > 0) {
      const ws = this.#waiters
      this.#waiters = []
      for (const w of ws) w()
    }
  }

  hasRoom(): boolean {
    return this.#bytes <= this.limit
  }

  /** Calls `wake` once there is room again. */
  wait(wake: () => void): void {
    this.#waiters.push(wake)
  }
}
