/**
 * @module workers/sessions
 * The one session pool every remote driver uses: SFTP connections, FTP control
 * connections, SMB sessions, S3 clients. A driver supplies how to open, close and
 * (optionally) probe a session; the pool bounds how many exist, reuses idle ones,
 * queues callers FIFO when all are busy, and closes sessions that sit idle.
 *
 * Health, after rclone's `putSftpConnection`: a session released with no error, or
 * with a "regular" FsError (the operation failed, the connection did not: ENOENT,
 * EEXIST, ...), goes back to the pool. Any other error may mean a dead connection,
 * so the session is probed when the driver gave a probe, and discarded when the
 * probe fails or there is none. A discarded session frees its place, and the first
 * waiter gets a freshly opened one.
 *
 * Accounting: `max` bounds every session the pool is responsible for, whether idle,
 * busy (checked out or being probed), being opened or being closed, so a server
 * with a per-client connection limit never sees more than `max` at once.
 */
import { FsError, type FsErrorCode, isFsError } from '../core/errors.js'

// Options --------------------------------------------------------------------

export interface SessionPoolOptions<S> {
  /**
   * Opens a session. `signal` aborts when the open exceeds `acquireTimeoutMs` or the
   * pool closes; the pool stops waiting then either way, and closes a session that
   * arrives late. Throw an FsError (EAUTH, EUNAVAILABLE, ...); anything else is
   * reported as EUNAVAILABLE.
   */
  readonly open: (signal: AbortSignal) => Promise<S>
  /** Closes a session. Must settle promptly (destroy rather than wait for a dead peer): its place stays taken until it does. Errors are ignored. */
  readonly close: (session: S) => Promise<void>
  /** Resolves when the session still works, rejects otherwise; bounded by `acquireTimeoutMs`. */
  readonly probe?: (session: S) => Promise<void>
  /**
   * True for a session known dead without asking (its socket closed while idle): it is
   * discarded instead of handed out.
   */
  readonly isBroken?: (session: S) => boolean
  /** Most sessions at once; a positive integer. */
  readonly max: number
  /** A session idle this long is closed; positive ms, or Infinity to keep idle sessions. */
  readonly idleMs: number
  /** How long `acquire` may wait, opening included; positive ms, or Infinity. */
  readonly acquireTimeoutMs: number
}

export interface SessionPoolStats {
  /** Sessions that exist: idle + busy (not those being opened or closed). */
  readonly open: number
  readonly idle: number
  /** Checked out, or being probed after a failed operation. */
  readonly busy: number
  /** Callers queued for a session. */
  readonly waiting: number
}

/** Codes that describe the operation, not the connection: the session stays healthy. */
export const REGULAR_CODES: ReadonlySet<FsErrorCode> = new Set<FsErrorCode>([
  'ENOENT',
  'EEXIST',
  'ENOTDIR',
  'EISDIR',
  'ENOTEMPTY',
  'EACCES',
  'EINVAL',
])

/** True for an FsError whose code leaves the session it happened on healthy. */
export function isRegularError(err: unknown): boolean {
  return isFsError(err) && REGULAR_CODES.has(err.code)
}

function checkMs(name: string, v: unknown): void {
  if (typeof v !== 'number' || !(v > 0)) {
    throw new RangeError(`SessionPool: options.${name} must be a positive number of milliseconds or Infinity (got ${String(v)})`)
  }
}

function validate<S>(o: SessionPoolOptions<S>): void {
  if (typeof o !== 'object' || o === null) throw new TypeError('SessionPool: options must be an object')
  if (typeof o.open !== 'function') throw new TypeError('SessionPool: options.open must be a function')
  if (typeof o.close !== 'function') throw new TypeError('SessionPool: options.close must be a function')
  if (o.probe !== undefined && typeof o.probe !== 'function') {
    throw new TypeError('SessionPool: options.probe must be a function when given')
  }
  if (!Number.isSafeInteger(o.max) || o.max < 1) {
    throw new RangeError(`SessionPool: options.max must be a positive integer (got ${String(o.max)})`)
  }
  checkMs('idleMs', o.idleMs)
  checkMs('acquireTimeoutMs', o.acquireTimeoutMs)
}

// Timers and errors ----------------------------------------------------------

/** Node clamps longer delays to 1 ms (with a warning): treat them as "never". */
const MAX_DELAY = 2 ** 31 - 1

function timer(ms: number, fn: () => void, ref: boolean): NodeJS.Timeout | undefined {
  if (ms > MAX_DELAY) return undefined
  const t = setTimeout(fn, ms)
  if (!ref) t.unref()
  return t
}

const closedError = (): FsError => new FsError('EUNAVAILABLE', 'the session pool is closed', { retryable: false })
const canceledError = (): FsError => new FsError('ECANCELED', 'cancelled while waiting for a session')

function openError(err: unknown): FsError {
  return isFsError(err) ? err : new FsError('EUNAVAILABLE', 'could not open a session', { cause: err })
}

// Waiter ---------------------------------------------------------------------

/** One pending `acquire`: settles once, by a session, a timeout, an abort or close. */
class Waiter<S> {
  #done = false
  #cleanup: () => void = () => {}
  readonly #resolve: (s: S) => void
  readonly #reject: (e: FsError) => void

  constructor(resolve: (s: S) => void, reject: (e: FsError) => void) {
    this.#resolve = resolve
    this.#reject = reject
  }

  onSettle(cleanup: () => void): void {
    this.#cleanup = cleanup
  }

  /** Hands over a session; false when this waiter has already given up. */
  give(s: S): boolean {
    if (!this.#settle()) return false
    this.#resolve(s)
    return true
  }

  fail(err: FsError): void {
    if (this.#settle()) this.#reject(err)
  }

  #settle(): boolean {
    if (this.#done) return false
    this.#done = true
    this.#cleanup()
    return true
  }
}

// The pool -------------------------------------------------------------------

/** How a driver sizes its session pool: the same knobs for every pooled driver. */
export interface PoolKnobs {
  /** Sessions (connections) per driver; default 4. */
  readonly maxSessions?: number
  /** An idle session is closed after this long; default 60 s. */
  readonly idleMs?: number
  /** Connecting and logging in, one request, or waiting for a session; default 20 s. */
  readonly timeoutMs?: number
}

export class SessionPool<S extends object> {
  readonly #o: SessionPoolOptions<S>
  /** Most recently released last: reuse takes from the end, so cold sessions age out. */
  readonly #idle: S[] = []
  readonly #idleTimers = new Map<S, NodeJS.Timeout | undefined>()
  readonly #busy = new Set<S>()
  readonly #waiters: Waiter<S>[] = []
  /** Cancels each open in flight (used by close). */
  readonly #openings = new Set<() => void>()
  #closing = 0
  #closed: Promise<void> | null = null

  constructor(options: SessionPoolOptions<S>) {
    validate(options)
    this.#o = { ...options }
  }

  /**
   * A session for exclusive use until `release`. Reuses an idle session, opens one
   * while fewer than `max` exist, and otherwise waits its turn (FIFO).
   * @throws FsError ECANCELED (signal) | ETIMEDOUT | EUNAVAILABLE (closed, or open failed) | what `open` threw
   */
  acquire(signal?: AbortSignal): Promise<S> {
    if (this.#closed !== null) return Promise.reject(closedError())
    if (signal?.aborted === true) return Promise.reject(canceledError())
    // An idle session exists only when nobody waits (releases hand over to waiters first).
    const idle = this.#takeIdle()
    if (idle !== undefined) return Promise.resolve(idle)
    return new Promise<S>((resolve, reject) => {
      const w = new Waiter<S>(resolve, reject)
      this.#arm(w, signal)
      if (this.#waiters.length === 0 && this.#size() < this.#o.max) this.#openFor(w)
      else this.#waiters.push(w)
    })
  }

  /**
   * Gives a session back. With `err` (what the operation threw) the session is kept
   * when the error is regular, else probed, else discarded. The promise settles when
   * the session is back in the pool or closed, and never rejects.
   * @throws Error (synchronously) when the session is not checked out: a double release is a bug.
   */
  release(session: S, err?: unknown): Promise<void> {
    // After close() every session was closed, busy ones included: nothing to give back.
    if (this.#closed !== null) return Promise.resolve()
    if (!this.#busy.has(session)) throw new Error('SessionPool.release: this session is not checked out (released twice?)')
    return this.#settle(session, err)
  }

  /** Runs `fn` with a session and releases it with whatever `fn` threw. */
  async use<T>(fn: (session: S) => Promise<T>, signal?: AbortSignal, classify: (err: unknown) => unknown = (e) => e): Promise<T> {
    const s = await this.acquire(signal)
    let result: T
    try {
      result = await fn(s)
    } catch (err) {
      // Classified first (a driver's native error → FsError): that tells release whether
      // the session is still good. Not awaited: the caller gets its error now, while a
      // probe runs in the background.
      const e = classify(err)
      void this.release(s, e)
      throw e
    }
    void this.release(s)
    return result
  }

  /** Closes every idle session (busy ones are untouched). */
  async drain(): Promise<void> {
    const all = this.#idle.splice(0)
    for (const s of all) this.#clearIdleTimer(s)
    await Promise.all(all.map((s) => this.#discard(s)))
  }

  /**
   * Closes every session, busy ones included, and rejects every waiter with
   * EUNAVAILABLE. Busy sessions are not waited for: a session leaked by a bug would
   * hang shutdown forever, and an operation in flight during close is meant to end.
   * Idempotent.
   */
  close(): Promise<void> {
    this.#closed ??= this.#closeAll()
    return this.#closed
  }

  stats(): SessionPoolStats {
    const idle = this.#idle.length
    const busy = this.#busy.size
    return { open: idle + busy, idle, busy, waiting: this.#waiters.length }
  }

  // Internals ----------------------------------------------------------------

  #size(): number {
    return this.#idle.length + this.#busy.size + this.#openings.size + this.#closing
  }

  /** Timeout and abort for one waiter; both take it out of the queue. */
  #arm(w: Waiter<S>, signal: AbortSignal | undefined): void {
    const ms = this.#o.acquireTimeoutMs
    const giveUp = (err: FsError): void => {
      const i = this.#waiters.indexOf(w)
      if (i >= 0) this.#waiters.splice(i, 1)
      w.fail(err)
    }
    const onAbort = (): void => giveUp(canceledError())
    // Referenced: a caller waiting for a session is real pending work.
    const t = timer(ms, () => giveUp(new FsError('ETIMEDOUT', `no session available within ${ms} ms (max ${this.#o.max}: ${this.#busy.size} busy, ${this.#openings.size} opening, ${this.#waiters.length} waiting)`)), true)
    signal?.addEventListener('abort', onAbort, { once: true })
    w.onSettle(() => {
      clearTimeout(t)
      signal?.removeEventListener('abort', onAbort)
    })
  }

  /**
   * Opens a session for `w`. The open ends at the first of: success, failure, its own
   * timeout, pool close; a session arriving after that is closed. If `w` gave up
   * meanwhile, the new session serves the next waiter or goes idle.
   */
  #openFor(w: Waiter<S>): void {
    const ac = new AbortController()
    const ms = this.#o.acquireTimeoutMs
    let ended = false
    const end = (): boolean => {
      if (ended) return false
      ended = true
      clearTimeout(t)
      this.#openings.delete(cancel)
      return true
    }
    const fail = (err: FsError): void => {
      if (!end()) return
      ac.abort(err)
      w.fail(err)
      this.#dispatch()
    }
    const cancel = (): void => fail(closedError())
    const t = timer(ms, () => fail(new FsError('ETIMEDOUT', `opening a session took longer than ${ms} ms`)), true)
    this.#openings.add(cancel)
    // Through a promise executor, so that an `open` throwing synchronously is a failure too.
    new Promise<S>((resolve) => resolve(this.#o.open(ac.signal))).then(
      (s) => {
        if (!end()) return void this.#discard(s)
        this.#busy.add(s)
        if (!w.give(s)) this.#handOff(s)
      },
      (err: unknown) => fail(openError(err)),
    )
  }

  /** Decides a released session's fate (see the module comment). */
  async #settle(s: S, err: unknown): Promise<void> {
    const healthy = err === undefined || isRegularError(err) || (await this.#probeOk(s))
    if (this.#closed !== null) return // close() closed it while it was probed
    if (healthy) return this.#handOff(s)
    this.#busy.delete(s)
    await this.#discard(s)
  }

  async #probeOk(s: S): Promise<boolean> {
    const probe = this.#o.probe
    if (probe === undefined) return false
    let t: NodeJS.Timeout | undefined
    // A probe on a dead connection may hang; its session would stay busy forever.
    const timeout = new Promise<never>((_, reject) => {
      t = timer(this.#o.acquireTimeoutMs, () => reject(new Error('probe timed out')), true)
    })
    try {
      await Promise.race([probe(s), timeout])
      return true
    } catch {
      return false
    } finally {
      clearTimeout(t)
    }
  }

  /** A busy session goes to the first waiter, or idle. */
  #handOff(s: S): void {
    for (let w = this.#waiters.shift(); w !== undefined; w = this.#waiters.shift()) {
      if (w.give(s)) return
    }
    this.#busy.delete(s)
    this.#idle.push(s)
    // Unreferenced: idle sessions must not keep the process alive.
    this.#idleTimers.set(s, timer(this.#o.idleMs, () => this.#expire(s), false))
  }

  #takeIdle(): S | undefined {
    for (;;) {
      const s = this.#idle.pop()
      if (s === undefined) return undefined
      this.#clearIdleTimer(s)
      if (this.#o.isBroken?.(s)) {
        void this.#discard(s)
        continue
      }
      this.#busy.add(s)
      return s
    }
  }

  #expire(s: S): void {
    const i = this.#idle.indexOf(s)
    if (i < 0) return
    this.#idle.splice(i, 1)
    this.#idleTimers.delete(s)
    void this.#discard(s)
  }

  #clearIdleTimer(s: S): void {
    clearTimeout(this.#idleTimers.get(s))
    this.#idleTimers.delete(s)
  }

  /** Closes a session that is in no list any more; its place is free once the close settles. */
  async #discard(s: S): Promise<void> {
    this.#closing++
    try {
      await this.#o.close(s)
    } catch {
      // The session is being thrown away: a failing close changes nothing.
    } finally {
      this.#closing--
      this.#dispatch()
    }
  }

  /** Opens sessions for waiters while there is room. */
  #dispatch(): void {
    while (this.#closed === null && this.#waiters.length > 0 && this.#size() < this.#o.max) {
      this.#openFor(this.#waiters.shift()!)
    }
  }

  async #closeAll(): Promise<void> {
    for (const w of this.#waiters.splice(0)) w.fail(closedError())
    for (const cancel of [...this.#openings]) cancel()
    const all = [...this.#idle.splice(0), ...this.#busy]
    for (const s of all) this.#clearIdleTimer(s)
    this.#busy.clear()
    await Promise.all(all.map((s) => this.#discard(s)))
  }
}
