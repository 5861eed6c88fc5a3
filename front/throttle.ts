/**
 * @module front/throttle
 * Failed-password throttling per (scope, client address): after `max` attempts
 * that did not succeed within `windowMs`, that address gets 429 RATE_LIMITED for
 * that scope (one share, the admin login, one local connection) until the window
 * has passed. An attempt is counted when it starts, before the (slow) check, so
 * parallel guesses cannot all slip under the limit. A success forgets only its own
 * scope's count: a right password on one's own share gives nothing back against
 * another share.
 *
 * The counts live in the state store (core/state.ts), counted there atomically: every
 * node sharing the store shares the throttle, and a restart gives nothing back. A
 * count leaves only when its window has passed, so flooding the throttle from many
 * other addresses never gives a locked-out address its attempts back (no amnesty).
 * IPv6 addresses count by their /64, the block one subscriber usually gets, so one
 * host cannot rotate through them.
 */
import { isIPv6 } from 'node:net'
import { ApiError } from '../core/api-error.js'
import type { StateStore } from '../core/state.js'

/** Ended windows are purged from the store at most this often (by each throttle). */
const PURGE_EVERY_MS = 60_000

export class Throttle {
  readonly #state: StateStore
  readonly #max: number
  readonly #windowMs: number
  readonly #what: string
  #purged = 0

  /** @param opts.what names the throttle in its refusals and keeps its counts apart from other throttles' */
  constructor(opts: { state: StateStore; max: number; windowMs: number; what: string }) {
    this.#state = opts.state
    this.#max = opts.max
    this.#windowMs = opts.windowMs
    this.#what = opts.what
  }

  /** Counts an attempt. @throws ApiError RATE_LIMITED when the address has used up its attempts for `scope` */
  async attempt(scope: string, address: string): Promise<void> {
    const now = Date.now()
    if (now - this.#purged >= PURGE_EVERY_MS) {
      this.#purged = now
      await this.#state.purgeThrottles(now)
    }
    const { count, since } = await this.#state.throttleHit(this.#key(scope, address), this.#windowMs, now)
    if (count > this.#max) this.#refuse(since, now)
  }

  /**
   * For credentials checked in microseconds that cannot be guessed (S3 signatures): refuses
   * an address that used up its attempts for `scope`, counting nothing (`failed` counts a
   * failure), so a success costs the store a read, not two writes.
   * @throws ApiError RATE_LIMITED
   */
  async check(scope: string, address: string): Promise<void> {
    const now = Date.now()
    const c = await this.#state.throttlePeek(this.#key(scope, address), now)
    if (c !== null && c.count >= this.#max) this.#refuse(c.since, now)
  }

  /** Counts a failure after `check`. */
  async failed(scope: string, address: string): Promise<void> {
    await this.#state.throttleHit(this.#key(scope, address), this.#windowMs, Date.now())
  }

  /** A right password: forgets what was counted against `scope` from this address, nothing else. */
  succeeded(scope: string, address: string): Promise<void> {
    return this.#state.throttleForget(this.#key(scope, address))
  }

  /**
   * An attempt that succeeded: takes back its own count, and only that. For scopes many
   * accounts share (the gateway logins), where forgetting every failure on a success
   * would let one's own account buy more guesses at another's.
   */
  refund(scope: string, address: string): Promise<void> {
    return this.#state.throttleRefund(this.#key(scope, address))
  }

  /** The store's key: no tab in `what` or an address key, so the scope (anything) goes last. */
  #key(scope: string, address: string): string {
    return `${this.#what}\t${addressKey(address)}\t${scope}`
  }

  #refuse(since: number, now: number): never {
    throw new ApiError('RATE_LIMITED', `too many failed ${this.#what} from this address: try again in ${Math.ceil((since + this.#windowMs - now) / 60_000)} minutes`)
  }
}

/**
 * The unit an address is counted by: an IPv4 address itself (also when written as
 * IPv4-mapped IPv6), an IPv6 address's /64.
 */
export function addressKey(address: string): string {
  const bare = address.replace(/%.*$/, '') // a zone id names an interface, not a host
  if (!isIPv6(bare)) return address
  const g = ipv6Groups(bare)
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`
  return `${g
    .slice(0, 4)
    .map((x) => x.toString(16))
    .join(':')}::/64`
}

/** A valid IPv6 address's eight 16-bit groups. */
function ipv6Groups(a: string): number[] {
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(a)
  const s = dotted ? `${a.slice(0, dotted.index)}${((+dotted[1]! << 8) | +dotted[2]!).toString(16)}:${((+dotted[3]! << 8) | +dotted[4]!).toString(16)}` : a
  const [head, tail] = s.split('::') as [string, string | undefined]
  const h = head ? head.split(':') : []
  const t = tail ? tail.split(':') : []
  const zeros = tail === undefined ? [] : Array<string>(8 - h.length - t.length).fill('0')
  return [...h, ...zeros, ...t].map((x) => parseInt(x, 16))
}

/**
 * Login checks from one address run a few at a time; the others wait their turn. With
 * the throttle counting an attempt when it starts, this is what lets a client open many
 * sessions at once (rclone opens a dozen SFTP connections together) without its own
 * logins in flight counting as a lock-out, while parallel guesses still cannot outrun
 * the count: at most `perAddress` are being checked at any time.
 */
export class AttemptGate {
  readonly #perAddress: number
  readonly #maxWaiting: number
  readonly #slots = new Map<string, { running: number; readonly waiting: (() => void)[] }>()

  constructor(opts: { perAddress: number; maxWaiting: number }) {
    this.#perAddress = opts.perAddress
    this.#maxWaiting = opts.maxWaiting
  }

  /** Runs `fn` once a slot for `address` is free. @throws ApiError RATE_LIMITED when too many already wait */
  async run<T>(address: string, fn: () => Promise<T>): Promise<T> {
    const key = addressKey(address)
    let slot = this.#slots.get(key)
    if (!slot) this.#slots.set(key, (slot = { running: 0, waiting: [] }))
    if (slot.running >= this.#perAddress) {
      if (slot.waiting.length >= this.#maxWaiting) throw new ApiError('RATE_LIMITED', 'too many logins at once from this address')
      await new Promise<void>((resolve) => slot!.waiting.push(resolve))
    } else {
      slot.running++
    }
    try {
      return await fn()
    } finally {
      const next = slot.waiting.shift()
      if (next) next() // the slot passes on, still counted as running
      else if (--slot.running === 0) this.#slots.delete(key)
    }
  }
}
