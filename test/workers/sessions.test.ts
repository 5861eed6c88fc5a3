/**
 * @module test/workers/sessions.test
 * SessionPool against a tiny real factory: sessions are objects with counters, and
 * every wait is on an event (a session opened or closed, a promise settled), never
 * on a sleep long enough to hope the pool got there first.
 */
import { EventEmitter, once } from 'node:events'
import t from 'tap'
import { FsError } from '../../core/errors.js'
import { SessionPool, type SessionPoolOptions, isRegularError } from '../../workers/sessions.js'

// Factory --------------------------------------------------------------------

interface Session {
  readonly id: number
  closed: boolean
  /** The probe fails on a broken session. */
  broken: boolean
}

interface Factory {
  opened: number
  closed: number
  probes: number
  /** Emits 'open' and 'close' with the session. */
  readonly events: EventEmitter
  /** The last AbortSignal `open` received. */
  lastSignal: AbortSignal | null
  /** When set, `open` waits for this before resolving (or rejects if it rejects). */
  gate: Promise<void> | null
  /** When set, `open` throws it. */
  failWith: unknown
  readonly opts: SessionPoolOptions<Session>
}

function factory(over: Partial<SessionPoolOptions<Session>> = {}, withProbe = false): Factory {
  const f: Factory = {
    opened: 0,
    closed: 0,
    probes: 0,
    events: new EventEmitter(),
    lastSignal: null,
    gate: null,
    failWith: undefined,
    opts: {
      open: async (signal) => {
        f.lastSignal = signal
        if (f.failWith !== undefined) throw f.failWith
        if (f.gate !== null) await f.gate
        const s: Session = { id: ++f.opened, closed: false, broken: false }
        f.events.emit('open', s)
        return s
      },
      close: async (s) => {
        s.closed = true
        f.closed++
        f.events.emit('close', s)
      },
      max: 2,
      idleMs: 60_000,
      acquireTimeoutMs: 5_000,
      ...(withProbe
        ? {
            probe: async (s: Session) => {
              f.probes++
              if (s.broken) throw new Error('connection reset')
            },
          }
        : {}),
      ...over,
    },
  }
  return f
}

/** A promise with its resolve and reject in hand. */
function deferred(): { promise: Promise<void>; resolve: () => void; reject: (e: unknown) => void } {
  let resolve!: () => void
  let reject!: (e: unknown) => void
  const promise = new Promise<void>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/**
 * Waits for `p`, failing after `ms`. The referenced guard timer also keeps the event
 * loop alive while the pool's own (unreferenced) idle timers run.
 */
async function within<T>(p: Promise<T>, what: string, ms = 5_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const guard = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms)
  })
  try {
    return await Promise.race([p, guard])
  } finally {
    clearTimeout(timer)
  }
}

/** Records the order in which promises resolve. */
function track<T>(order: string[], name: string, p: Promise<T>): Promise<T> {
  return p.then((v) => {
    order.push(name)
    return v
  })
}

// Options --------------------------------------------------------------------

t.test('options are validated with precise messages', async (t) => {
  const base = factory().opts
  const bad: [Partial<Record<keyof SessionPoolOptions<Session>, unknown>>, RegExp][] = [
    [{ open: undefined }, /options\.open must be a function/],
    [{ close: 42 }, /options\.close must be a function/],
    [{ probe: 'yes' }, /options\.probe must be a function when given/],
    [{ max: 0 }, /options\.max must be a positive integer \(got 0\)/],
    [{ max: 1.5 }, /options\.max must be a positive integer \(got 1\.5\)/],
    [{ idleMs: -1 }, /options\.idleMs must be a positive number of milliseconds or Infinity \(got -1\)/],
    [{ idleMs: Number.NaN }, /options\.idleMs .* \(got NaN\)/],
    [{ acquireTimeoutMs: '100' }, /options\.acquireTimeoutMs must be a positive number/],
  ]
  for (const [over, message] of bad) {
    t.throws(() => new SessionPool({ ...base, ...over } as SessionPoolOptions<Session>), { message }, JSON.stringify(over))
  }
  t.throws(() => new SessionPool(null as unknown as SessionPoolOptions<Session>), { message: /options must be an object/ })
  t.doesNotThrow(() => new SessionPool({ ...base, idleMs: Infinity, acquireTimeoutMs: Infinity }), 'Infinity is allowed')
})

t.test('isRegularError: the operation failed, not the connection', async (t) => {
  for (const code of ['ENOENT', 'EEXIST', 'ENOTDIR', 'EISDIR', 'ENOTEMPTY', 'EACCES', 'EINVAL'] as const) {
    t.ok(isRegularError(new FsError(code, 'x')), code)
  }
  for (const code of ['EIO', 'ETIMEDOUT', 'EUNAVAILABLE', 'ECANCELED', 'EAUTH'] as const) {
    t.notOk(isRegularError(new FsError(code, 'x')), code)
  }
  t.notOk(isRegularError(Object.assign(new Error('x'), { code: 'ENOENT' })), 'a raw Node error is not classified')
})

// Reuse, bound, FIFO ---------------------------------------------------------

t.test('reuses an idle session', async (t) => {
  const f = factory()
  const pool = new SessionPool(f.opts)
  t.teardown(() => pool.close())
  const a = await pool.acquire()
  t.same(pool.stats(), { open: 1, idle: 0, busy: 1, waiting: 0 })
  await pool.release(a)
  t.same(pool.stats(), { open: 1, idle: 1, busy: 0, waiting: 0 })
  t.equal(await pool.acquire(), a, 'same session')
  t.equal(f.opened, 1)
})

t.test('bounded by max; waiters are served FIFO', async (t) => {
  const f = factory({ max: 2 })
  const pool = new SessionPool(f.opts)
  t.teardown(() => pool.close())
  const [a, b] = await Promise.all([pool.acquire(), pool.acquire()])
  t.not(a, b)
  const order: string[] = []
  const c = track(order, 'c', pool.acquire())
  const d = track(order, 'd', pool.acquire())
  const e = track(order, 'e', pool.acquire())
  t.same(pool.stats(), { open: 2, idle: 0, busy: 2, waiting: 3 })
  await pool.release(b!)
  t.equal(await c, b, 'first waiter gets the first session released')
  await pool.release(a!)
  t.equal(await d, a)
  await pool.release(b!)
  t.equal(await e, b)
  t.same(order, ['c', 'd', 'e'])
  t.equal(f.opened, 2, 'never more than max opened')
  t.same(pool.stats(), { open: 2, idle: 0, busy: 2, waiting: 0 })
})

t.test('a double release is a bug and throws', async (t) => {
  const pool = new SessionPool(factory().opts)
  t.teardown(() => pool.close())
  const a = await pool.acquire()
  await pool.release(a)
  t.throws(() => pool.release(a), { message: /not checked out/ })
})

// Health ---------------------------------------------------------------------

t.test('regular errors keep the session, without a probe', async (t) => {
  const f = factory({}, true)
  const pool = new SessionPool(f.opts)
  t.teardown(() => pool.close())
  const a = await pool.acquire()
  await pool.release(a, new FsError('ENOENT', 'no such file'))
  t.equal(await pool.acquire(), a)
  t.equal(f.probes, 0)
})

t.test('without a probe, a broken session is replaced', async (t) => {
  const f = factory({ max: 1 })
  const pool = new SessionPool(f.opts)
  t.teardown(() => pool.close())
  const a = await pool.acquire()
  const waiter = pool.acquire()
  const closed = once(f.events, 'close')
  await pool.release(a, new Error('socket hang up'))
  t.equal((await within(closed, 'close'))[0], a, 'the broken session is closed')
  const b = await within(waiter, 'the waiter')
  t.not(b, a, 'the waiter gets a fresh session')
  t.equal(f.opened, 2)
  t.same(pool.stats(), { open: 1, idle: 0, busy: 1, waiting: 0 })
})

t.test('the probe decides after a non-regular error', async (t) => {
  const f = factory({}, true)
  const pool = new SessionPool(f.opts)
  t.teardown(() => pool.close())
  const a = await pool.acquire()
  await pool.release(a, new FsError('ETIMEDOUT', 'slow'))
  t.equal(f.probes, 1, 'probed')
  t.equal(await pool.acquire(), a, 'healthy: kept')
  a.broken = true
  await pool.release(a, new FsError('EIO', 'garbled reply'))
  t.equal(f.probes, 2)
  t.ok(a.closed, 'probe failed: closed')
  const b = await pool.acquire()
  t.not(b, a)
  t.equal(f.opened, 2)
})

t.test('a probe that hangs counts as failed', async (t) => {
  const f = factory({ acquireTimeoutMs: 20, probe: () => new Promise<void>(() => {}) })
  const pool = new SessionPool(f.opts)
  t.teardown(() => pool.close())
  const a = await pool.acquire()
  await within(pool.release(a, new FsError('EIO', 'x')), 'release')
  t.ok(a.closed)
  t.same(pool.stats(), { open: 0, idle: 0, busy: 0, waiting: 0 })
})

t.test('use() releases with the error', async (t) => {
  const f = factory()
  const pool = new SessionPool(f.opts)
  t.teardown(() => pool.close())
  t.equal(await pool.use(async (s) => s.id * 10), 10, 'returns the result')
  await t.rejects(
    pool.use(async () => {
      throw new FsError('EEXIST', 'taken')
    }),
    { code: 'EEXIST' },
  )
  t.equal(f.closed, 0, 'a regular error keeps the session')
  const closed = once(f.events, 'close')
  await t.rejects(
    pool.use(async () => {
      throw new Error('protocol desync')
    }),
    { message: 'protocol desync' },
    'the error is rethrown as is',
  )
  await within(closed, 'close')
  t.same(pool.stats(), { open: 0, idle: 0, busy: 0, waiting: 0 })
})

// Opening --------------------------------------------------------------------

t.test('a failed open rejects the caller and frees its place', async (t) => {
  const f = factory({ max: 1 })
  const pool = new SessionPool(f.opts)
  t.teardown(() => pool.close())
  f.failWith = new FsError('EAUTH', 'bad password')
  await t.rejects(pool.acquire(), { code: 'EAUTH' }, 'an FsError passes through')
  f.failWith = new Error('ECONNREFUSED')
  await t.rejects(pool.acquire(), { code: 'EUNAVAILABLE' }, 'anything else is EUNAVAILABLE')
  f.failWith = undefined
  const s = await pool.acquire()
  t.equal(s.id, 1, 'the place was not leaked')
})

t.test('an open that outlives acquireTimeoutMs is abandoned, and closed if it arrives', async (t) => {
  const f = factory({ max: 1, acquireTimeoutMs: 20 })
  const pool = new SessionPool(f.opts)
  t.teardown(() => pool.close())
  const gate = deferred()
  f.gate = gate.promise
  await t.rejects(within(pool.acquire(), 'acquire'), { code: 'ETIMEDOUT' })
  // The open has its own deadline, started just after the caller's.
  const signal = f.lastSignal!
  if (!signal.aborted) await within(once(signal, 'abort'), 'the open aborted')
  t.pass('open was told to stop')
  const closed = once(f.events, 'close')
  gate.resolve()
  await within(closed, 'the late session closed')
  f.gate = null
  t.ok(await within(pool.acquire(), 'a new acquire'), 'the place is free again')
})

t.test('a session opened for a caller who gave up serves the next one', async (t) => {
  const f = factory({ max: 1 })
  const pool = new SessionPool(f.opts)
  t.teardown(() => pool.close())
  const gate = deferred()
  f.gate = gate.promise
  const ac = new AbortController()
  const first = pool.acquire(ac.signal)
  const second = pool.acquire()
  ac.abort()
  await t.rejects(first, { code: 'ECANCELED' })
  gate.resolve()
  const s = await within(second, 'the second caller')
  t.equal(s.id, 1)
  t.equal(f.opened, 1, 'one open served both callers')
})

// Waiting: abort and timeout -------------------------------------------------

t.test('abort of a waiting acquire', async (t) => {
  const f = factory({ max: 1 })
  const pool = new SessionPool(f.opts)
  t.teardown(() => pool.close())
  const a = await pool.acquire()
  const ac = new AbortController()
  const waiting = pool.acquire(ac.signal)
  t.equal(pool.stats().waiting, 1)
  ac.abort()
  await t.rejects(waiting, { code: 'ECANCELED' })
  t.equal(pool.stats().waiting, 0, 'out of the queue')
  await pool.release(a)
  t.same(pool.stats(), { open: 1, idle: 1, busy: 0, waiting: 0 }, 'the release did not go to the aborted waiter')
  await t.rejects(pool.acquire(AbortSignal.abort()), { code: 'ECANCELED' }, 'an already aborted signal')
})

t.test('a waiting acquire times out', async (t) => {
  const f = factory({ max: 1, acquireTimeoutMs: 20 })
  const pool = new SessionPool(f.opts)
  t.teardown(() => pool.close())
  await pool.acquire()
  await t.rejects(within(pool.acquire(), 'acquire'), { code: 'ETIMEDOUT' })
  t.equal(pool.stats().waiting, 0)
})

// Idle -----------------------------------------------------------------------

t.test('idle sessions are closed after idleMs', async (t) => {
  const f = factory({ idleMs: 15 })
  const pool = new SessionPool(f.opts)
  t.teardown(() => pool.close())
  const [a, b] = await Promise.all([pool.acquire(), pool.acquire()])
  await pool.release(a!)
  // b stays busy: only idle sessions expire.
  t.equal((await within(once(f.events, 'close'), 'idle close'))[0], a)
  t.same(pool.stats(), { open: 1, idle: 0, busy: 1, waiting: 0 })
  t.notOk(b!.closed)
  await pool.release(b!)
  t.equal(await pool.acquire(), b, 'reuse clears the idle timer')
  t.equal(f.closed, 1)
})

t.test('drain() closes idle sessions only', async (t) => {
  const f = factory({ max: 3 })
  const pool = new SessionPool(f.opts)
  t.teardown(() => pool.close())
  const [a, b, c] = await Promise.all([pool.acquire(), pool.acquire(), pool.acquire()])
  await pool.release(a!)
  await pool.release(b!)
  await pool.drain()
  t.ok(a!.closed && b!.closed, 'idle ones closed')
  t.notOk(c!.closed, 'busy one untouched')
  t.same(pool.stats(), { open: 1, idle: 0, busy: 1, waiting: 0 })
})

// Close ----------------------------------------------------------------------

t.test('close() closes busy sessions and rejects waiters', async (t) => {
  const f = factory({ max: 2 })
  const pool = new SessionPool(f.opts)
  const [a, b] = await Promise.all([pool.acquire(), pool.acquire()])
  const queued = pool.acquire()
  t.equal(pool.stats().waiting, 1)
  const closing = pool.close()
  t.equal(pool.close(), closing, 'idempotent')
  await closing
  await t.rejects(queued, { code: 'EUNAVAILABLE' })
  t.ok(a!.closed && b!.closed, 'busy sessions closed')
  await t.rejects(pool.acquire(), { code: 'EUNAVAILABLE' }, 'acquire after close')
  await pool.release(a!, new Error('the connection was closed under me'))
  t.equal(f.closed, 2, 'a release after close is a no-op')
  t.same(pool.stats(), { open: 0, idle: 0, busy: 0, waiting: 0 })
})

t.test('close() closes idle sessions', async (t) => {
  const f = factory()
  const pool = new SessionPool(f.opts)
  const a = await pool.acquire()
  await pool.release(a)
  await pool.close()
  t.ok(a.closed)
  t.equal(f.closed, 1)
})

t.test('close() during an open rejects its caller and closes the late session', async (t) => {
  const f = factory()
  const pool = new SessionPool(f.opts)
  const gate = deferred()
  f.gate = gate.promise
  const pending = pool.acquire()
  await pool.close()
  await t.rejects(pending, { code: 'EUNAVAILABLE' })
  t.equal(f.lastSignal?.aborted, true)
  const closed = once(f.events, 'close')
  gate.resolve()
  await within(closed, 'the late session closed')
})

t.test('isBroken: an idle session known dead is discarded, never handed out', async (t) => {
  const f = factory({ isBroken: (s) => s.broken })
  const pool = new SessionPool(f.opts)
  t.teardown(() => pool.close())
  const a = await pool.acquire()
  await pool.release(a)
  a.broken = true // its socket closed while it sat idle
  const b = await pool.acquire()
  t.not(b.id, a.id, 'a fresh session instead of the dead one')
  t.ok(a.closed, 'the dead one was closed')
  await pool.release(b)
})

t.test('use(fn, signal, classify): the classified error is thrown and judges the session', async (t) => {
  const f = factory()
  const pool = new SessionPool(f.opts)
  t.teardown(() => pool.close())
  const native = Object.assign(new Error('No such file'), { code: 2 })
  await t.rejects(
    pool.use(async () => Promise.reject(native), undefined, () => new FsError('ENOENT', 'x: no such file or directory')),
    { name: 'FsError', code: 'ENOENT' },
    'the caller gets the classified error',
  )
  t.equal(pool.stats().idle, 1, 'a regular error keeps the session')
  const closed = once(f.events, 'close')
  await t.rejects(pool.use(async () => Promise.reject(native), undefined, () => new FsError('EUNAVAILABLE', 'connection lost')), { code: 'EUNAVAILABLE' })
  await closed
  t.equal(f.closed, 1, 'a connection error discards it (no probe configured)')
})
