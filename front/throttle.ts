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
 * A right password never locks an address out. An attempt refused by the throttle is
 * not counted (it was never checked), and near the limit the attempts of one address
 * are admitted one at a time: an attempt that finds the count full while others from
 * that address are still being checked here waits for them to settle and tries again,
 * instead of being refused for counts that may yet be taken back. So after 9 failures,
 * four right passwords at once all log in (one after the other) and leave the count at
 * 9; ten guesses at once still get at most one more check.
 *
 * The counts live in the state store (core/state.ts), counted there atomically: every
 * node sharing the store shares the throttle, and a restart gives nothing back. A
 * count leaves only when its window has passed, so flooding the throttle from many
 * other addresses never gives a locked-out address its attempts back (no amnesty).
 * IPv6 addresses count by their /64, the block one subscriber usually gets, so one
 * host cannot rotate through them.
 */
import { ApiError } from '../core/api-error.js'
import { addressKey } from '../core/networks.js'
import type { ThrottleStore } from '../core/state.js'

export { addressKey }

/** Ended windows are purged from the store at most this often (by each throttle). */
const PURGE_EVERY_MS = 60_000
/** How long an attempt waits at most for others from its address to settle before it is refused. */
const SETTLE_WAIT_MS = 30_000

/** An attempt counted by `Throttle.begin`, settled once by its outcome. */
export interface AttemptTicket {
  /**
   * The credentials were right: the attempt's own count is taken back (`refund`, for
   * scopes many accounts share: one's own account buys no guesses at another's), or
   * everything counted against the scope from this address is forgotten (`forget`).
   */
  right(how?: 'refund' | 'forget'): Promise<void>
  /** The credentials were wrong: the count stays. */
  wrong(): Promise<void>
}

export class Throttle {
  readonly #state: ThrottleStore
  readonly #max: number
  readonly #windowMs: number
  readonly #what: string
  /** Attempts being checked in this process, by store key, and who waits for them to settle. */
  readonly #checking = new Map<string, { running: number; readonly waiting: (() => void)[] }>()
  #purged = 0

  /** @param opts.what names the throttle in its refusals and keeps its counts apart from other throttles' */
  constructor(opts: { state: ThrottleStore; max: number; windowMs: number; what: string }) {
    this.#state = opts.state
    this.#max = opts.max
    this.#windowMs = opts.windowMs
    this.#what = opts.what
  }

  /**
   * Counts an attempt, to be settled by the ticket's `right` or `wrong` (a ticket left
   * unsettled keeps its count, as a wrong one does, and holds back this address's other
   * attempts near the limit until it is settled).
   * @throws ApiError RATE_LIMITED when the address has used up its attempts for `scope`
   */
  async begin(scope: string, address: string): Promise<AttemptTicket> {
    const key = this.#key(scope, address)
    const deadline = Date.now() + SETTLE_WAIT_MS
    for (;;) {
      const now = Date.now()
      if (now - this.#purged >= PURGE_EVERY_MS) {
        this.#purged = now
        await this.#state.purgeThrottles(now)
      }
      const { count, since } = await this.#state.throttleHit(key, this.#windowMs, now)
      if (count <= this.#max) return this.#ticket(key)
      // Refused: this attempt is not checked, so it does not count.
      await this.#state.throttleRefund(key)
      const checking = this.#checking.get(key)
      if (checking === undefined || Date.now() >= deadline) this.#refuse(since, now)
      // Others from this address are being checked: their outcome decides.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, deadline - Date.now()))
        timer.unref()
        checking.waiting.push(() => {
          clearTimeout(timer)
          resolve()
        })
      })
    }
  }

  /** Counts an attempt that is never settled (a registration, not a password). @throws ApiError RATE_LIMITED */
  async attempt(scope: string, address: string): Promise<void> {
    const now = Date.now()
    if (now - this.#purged >= PURGE_EVERY_MS) {
      this.#purged = now
      await this.#state.purgeThrottles(now)
    }
    const key = this.#key(scope, address)
    const { count, since } = await this.#state.throttleHit(key, this.#windowMs, now)
    if (count <= this.#max) return
    await this.#state.throttleRefund(key) // a refused attempt is not counted
    this.#refuse(since, now)
  }

  /**
   * For credentials checked in microseconds that cannot be guessed (S3 signatures): refuses
   * an address that used up its attempts for `scope`, counting nothing (`failed` counts a
   * failure), so a success costs the store a read, not two writes.
   * @throws ApiError RATE_LIMITED
   */
  async check(scope: string, address: string): Promise<void> {
    const now = Date.now()
    const key = this.#key(scope, address)
    const c = await this.#state.throttlePeek(key, now)
    // Password attempts being checked here are counted already, but are not failures (yet).
    if (c !== null && c.count - (this.#checking.get(key)?.running ?? 0) >= this.#max) this.#refuse(c.since, now)
  }

  /** Counts a failure after `check`. */
  async failed(scope: string, address: string): Promise<void> {
    await this.#state.throttleHit(this.#key(scope, address), this.#windowMs, Date.now())
  }

  /** One attempt being checked: counted in the store, and here until it is settled. */
  #ticket(key: string): AttemptTicket {
    let c = this.#checking.get(key)
    if (!c) this.#checking.set(key, (c = { running: 0, waiting: [] }))
    c.running++
    const checking = c
    let settled = false
    const settle = async (then: () => Promise<void>): Promise<void> => {
      if (settled) return
      settled = true
      try {
        await then()
      } finally {
        if (--checking.running === 0) this.#checking.delete(key)
        for (const wake of checking.waiting.splice(0)) wake()
      }
    }
    return {
      right: (how = 'refund') => settle(() => (how === 'forget' ? this.#state.throttleForget(key) : this.#state.throttleRefund(key))),
      wrong: () => settle(async () => {}),
    }
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
