/**
 * @module front/throttle
 * Failed-password throttling per client address: after `max` attempts that did
 * not succeed within `windowMs`, the address gets 429 RATE_LIMITED until the
 * window has passed. An attempt is counted when it starts, before the (slow)
 * check, so parallel guesses cannot all slip under the limit; a success forgets
 * the address.
 */
import { ApiError } from '../core/api-error.js'

export class Throttle {
  readonly #max: number
  readonly #windowMs: number
  readonly #what: string
  readonly #seen = new Map<string, { count: number; since: number }>()

  constructor(opts: { max: number; windowMs: number; what: string }) {
    this.#max = opts.max
    this.#windowMs = opts.windowMs
    this.#what = opts.what
  }

  /** Counts an attempt. @throws ApiError RATE_LIMITED when the address has used up its attempts */
  attempt(address: string): void {
    const now = Date.now()
    const prev = this.#seen.get(address)
    const cur = prev && prev.since > now - this.#windowMs ? prev : { count: 0, since: now }
    if (cur.count >= this.#max) {
      throw new ApiError('RATE_LIMITED', `too many failed ${this.#what} from this address: try again in ${Math.ceil((cur.since + this.#windowMs - now) / 60_000)} minutes`)
    }
    if (this.#seen.size > 10_000) this.#seen.clear() // bounded memory; an attacker flooding addresses only resets counts
    this.#seen.set(address, { count: cur.count + 1, since: cur.since })
  }

  succeeded(address: string): void {
    this.#seen.delete(address)
  }
}
