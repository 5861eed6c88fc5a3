/**
 * @module front/password-cache
 * Recent successful password checks of gateway logins (docs/gateways.md, "Repeated
 * logins"), so that a client opening many sessions with the same password pays the
 * scrypt check (front/passwords.ts) once every few minutes, not on every session.
 *
 * An entry is kept per user name: an HMAC-SHA256 of the password under a key made at
 * random for this process (the password itself is never kept), and the user's stored
 * password hash at the time of the check. It is used only while it is younger than
 * `ttlMs` and only while the user's stored hash is still the same one: a new password,
 * a password removed, or the user removed and made again all make it useless at once.
 * Failures are never kept. At most `max` entries, the least recently used go first.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

interface Entry {
  readonly mac: Buffer
  readonly hash: string
  readonly until: number
}

export class PasswordCache {
  readonly #key = randomBytes(32)
  readonly #ttlMs: number
  readonly #max: number
  /** In order of use: the first is the least recently used. */
  readonly #entries = new Map<string, Entry>()

  constructor(opts: { readonly ttlMs: number; readonly max: number }) {
    this.#ttlMs = opts.ttlMs
    this.#max = opts.max
  }

  /** Whether `password` is the one last checked for `user` while its stored hash was `hash`. */
  matches(user: string, password: string, hash: string): boolean {
    const e = this.#entries.get(user)
    if (!e) return false
    this.#entries.delete(user)
    if (e.hash !== hash || e.until <= Date.now()) return false // stale: dropped
    this.#entries.set(user, e) // most recently used
    return timingSafeEqual(e.mac, this.#mac(password))
  }

  /** Records a successful check of `password` against `hash`. */
  remember(user: string, password: string, hash: string): void {
    this.#entries.delete(user)
    this.#entries.set(user, { mac: this.#mac(password), hash, until: Date.now() + this.#ttlMs })
    if (this.#entries.size > this.#max) this.#entries.delete(this.#entries.keys().next().value!)
  }

  get size(): number {
    return this.#entries.size
  }

  /** As scrypt sees it (front/passwords.ts normalizes to NFC). */
  #mac(password: string): Buffer {
    return createHmac('sha256', this.#key).update(password.normalize('NFC')).digest()
  }
}
