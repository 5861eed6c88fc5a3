/**
 * @module gateways/connection/pending
 * Bytes written by a view's handles and not yet taken by a worker, all handles together:
 * past `limit`, writes wait (the protocol's own flow control then slows the client).
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
