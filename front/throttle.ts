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
 * Memory is bounded without amnesty for lock-outs: addresses still counting live
 * in one table, least recently seen dropped first when it is full; addresses that
 * used up their attempts move to a second table, from which an entry leaves only
 * when its window has passed (or, past `capacity` lock-outs within one window, the
 * oldest lock-out first). So flooding the throttle from many other addresses never
 * gives a locked-out address its attempts back. IPv6 addresses count by their /64,
 * the block one subscriber usually gets, so one host cannot rotate through them.
 */
import { isIPv6 } from 'node:net'
import { ApiError } from '../core/api-error.js'

interface Count {
  count: number
  readonly since: number
}

/** Entries per table by default: a few MB at most. */
export const THROTTLE_CAPACITY = 20_000

export class Throttle {
  readonly #max: number
  readonly #windowMs: number
  readonly #what: string
  readonly #capacity: number
  /** Addresses with attempts left, least recently seen first. */
  readonly #counting = new Map<string, Count>()
  /** Addresses with none left, in the order they were locked out. */
  readonly #locked = new Map<string, Count>()

  constructor(opts: { max: number; windowMs: number; what: string; capacity?: number }) {
    this.#max = opts.max
    this.#windowMs = opts.windowMs
    this.#what = opts.what
    this.#capacity = opts.capacity ?? THROTTLE_CAPACITY
  }

  /** Counts an attempt. @throws ApiError RATE_LIMITED when the address has used up its attempts for `scope` */
  attempt(scope: string, address: string): void {
    const now = Date.now()
    this.#expire(now)
    const key = `${scope}\0${addressKey(address)}`
    const locked = this.#locked.get(key)
    if (locked) {
      if (locked.since > now - this.#windowMs) {
        throw new ApiError('RATE_LIMITED', `too many failed ${this.#what} from this address: try again in ${Math.ceil((locked.since + this.#windowMs - now) / 60_000)} minutes`)
      }
      this.#locked.delete(key)
    }
    const prev = this.#counting.get(key)
    this.#counting.delete(key)
    const cur: Count = prev && prev.since > now - this.#windowMs ? prev : { count: 0, since: now }
    cur.count++
    const table = cur.count >= this.#max ? this.#locked : this.#counting
    table.set(key, cur)
    if (table.size > this.#capacity) table.delete(table.keys().next().value!)
  }

  /** A right password: forgets what was counted against `scope` from this address, nothing else. */
  succeeded(scope: string, address: string): void {
    const key = `${scope}\0${addressKey(address)}`
    this.#counting.delete(key)
    this.#locked.delete(key)
  }

  /**
   * An attempt that succeeded: takes back its own count, and only that. For scopes many
   * accounts share (the gateway logins), where forgetting every failure on a success
   * would let one's own account buy more guesses at another's.
   */
  refund(scope: string, address: string): void {
    const key = `${scope}\0${addressKey(address)}`
    const counting = this.#counting.get(key)
    const locked = this.#locked.get(key)
    const c = counting ?? locked
    if (!c) return
    c.count--
    if (c.count <= 0) {
      this.#counting.delete(key)
      this.#locked.delete(key)
    } else if (locked && c.count < this.#max) {
      this.#locked.delete(key)
      this.#counting.set(key, c)
    }
  }

  /** Addresses tracked (both tables). */
  get size(): number {
    return this.#counting.size + this.#locked.size
  }

  /** Drops entries whose window has passed from the front of each table (the oldest are there). */
  #expire(now: number): void {
    for (const table of [this.#counting, this.#locked]) {
      for (const [key, c] of table) {
        if (c.since > now - this.#windowMs) break
        table.delete(key)
      }
    }
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
