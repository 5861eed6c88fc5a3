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
 *
 * Checks of the same password for the same user and hash that arrive while one runs
 * (a client opening a hundred sessions at once) wait for that one instead of running
 * scrypt again each, and share its answer, right or wrong.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

/** How a password was found right or wrong. */
export type CheckedBy = 'recent' | 'joined' | 'checked'

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
  /** Checks running, by user, password MAC and hash. */
  readonly #running = new Map<string, Promise<boolean>>()

  constructor(opts: { readonly ttlMs: number; readonly max: number }) {
    this.#ttlMs = opts.ttlMs
    this.#max = opts.max
  }

  /**
   * Whether `password` is right for `user`, whose stored hash is `hash`, and how that
   * was known: from a recent success, from the same check already running, or from
   * `verify` (the scrypt check).
   */
  async check(user: string, password: string, hash: string, verify: () => Promise<boolean>): Promise<{ readonly ok: boolean; readonly how: CheckedBy }> {
    const mac = this.#mac(password)
    if (this.#matches(user, mac, hash)) return { ok: true, how: 'recent' }
    const key = `${user}\0${mac.toString('base64')}\0${hash}`
    const running = this.#running.get(key)
    if (running) return { ok: await running, how: 'joined' }
    const check = verify().finally(() => this.#running.delete(key))
    this.#running.set(key, check)
    const ok = await check
    if (ok) this.#remember(user, mac, hash)
    return { ok, how: 'checked' }
  }

  #matches(user: string, mac: Buffer, hash: string): boolean {
    const e = this.#entries.get(user)
    if (!e) return false
    this.#entries.delete(user)
    if (e.hash !== hash || e.until <= Date.now()) return false // stale: dropped
    this.#entries.set(user, e) // most recently used
    return timingSafeEqual(e.mac, mac)
  }

  #remember(user: string, mac: Buffer, hash: string): void {
    this.#entries.delete(user)
    this.#entries.set(user, { mac, hash, until: Date.now() + this.#ttlMs })
    if (this.#entries.size > this.#max) this.#entries.delete(this.#entries.keys().next().value!)
  }

  /** As scrypt sees it (front/passwords.ts normalizes to NFC). */
  #mac(password: string): Buffer {
    return createHmac('sha256', this.#key).update(password.normalize('NFC')).digest()
  }
}
