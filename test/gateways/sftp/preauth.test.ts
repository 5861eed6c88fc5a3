/**
 * The SFTP door before login (issue: thousands of banner-only connections used every
 * descriptor of the process): connections not logged in are capped per address and in
 * all (OpenSSH's MaxStartups), one that does not finish its key exchange in time is
 * dropped well before the login grace, the door's connections of every kind are capped,
 * refusals are logged once, not once each, and users who log in are served throughout.
 * Other client addresses are other loopback addresses (127.0.0.x).
 */
import { type Socket, connect } from 'node:net'
import t, { type Test } from 'tap'
import { Startups } from '../../../gateways/sftp/startups.js'
import { call, ssh2Sftp } from './clients.js'
import { startGateway } from './fixture.js'

interface Line {
  readonly msg: string
  readonly [k: string]: unknown
}

function recorder(): { lines: Line[]; logger: { log: (level: string, msg: string, fields?: Record<string, unknown>) => void } } {
  const lines: Line[] = []
  return { lines, logger: { log: (_level, msg, fields) => void lines.push({ msg, ...fields }) } }
}

/**
 * A raw TCP connection from `from` that sends `send` (if anything) and nothing more:
 * `admitted` once the server's SSH banner arrives, `refused` when it is closed without one.
 */
function raw(t: Test, port: number, from: string, send?: string): Promise<{ socket: Socket; outcome: 'admitted' | 'refused' }> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress: from })
    t.teardown(() => socket.destroy())
    socket.on('error', () => {})
    const timer = setTimeout(() => resolve({ socket, outcome: 'admitted' }), 20_000) // a guard only
    socket.once('data', (b: Buffer) => {
      clearTimeout(timer)
      if (send !== undefined) socket.write(send)
      resolve({ socket, outcome: b.toString('latin1').startsWith('SSH-2.0-') ? 'admitted' : 'refused' })
    })
    socket.once('close', () => {
      clearTimeout(timer)
      resolve({ socket, outcome: 'refused' })
    })
  })
}

const closed = (s: Socket, ms: number): Promise<boolean> =>
  new Promise((resolve) => {
    if (s.destroyed) return resolve(true)
    const timer = setTimeout(() => resolve(false), ms)
    s.once('close', () => {
      clearTimeout(timer)
      resolve(true)
    })
  })

t.test('connections not logged in: capped per address and in all; users are still served', async (t) => {
  const { lines, logger } = recorder()
  const { login } = await startGateway(t, { logger, sftp: { max_startups: '6', max_startups_per_address: 3, kex_grace_seconds: 60, login_grace_seconds: 120 } })
  const flood2 = await Promise.all([1, 2, 3].map(() => raw(t, login.port, '127.0.0.2')))
  t.same(flood2.map((c) => c.outcome), ['admitted', 'admitted', 'admitted'], 'three from one address are held')
  const over = await Promise.all([1, 2, 3].map(() => raw(t, login.port, '127.0.0.2')))
  t.same(over.map((c) => c.outcome), ['refused', 'refused', 'refused'], 'past the per-address cap, closed at once')

  const { sftp } = await ssh2Sftp(t, login)
  t.ok(Array.isArray(await call(sftp.readdir.bind(sftp), '.')), 'a user from another address logs in and is served')

  const flood3 = await Promise.all([1, 2, 3].map(() => raw(t, login.port, '127.0.0.3')))
  t.same(flood3.map((c) => c.outcome), ['admitted', 'admitted', 'admitted'], 'three from a second address')
  t.equal((await raw(t, login.port, '127.0.0.4')).outcome, 'refused', 'past the cap in all (6), a third address is refused too')
  t.ok(Array.isArray(await call(sftp.readdir.bind(sftp), '.')), 'the logged-in user is still served (logged in: not counted)')

  for (const c of flood2) c.socket.destroy()
  let again = false
  for (const deadline = Date.now() + 20_000; !again && Date.now() < deadline; ) {
    again = await ssh2Sftp(t, login).then(
      () => true,
      () => false,
    )
  }
  t.ok(again, 'once the flood from one address is gone, a new login gets through')
  t.equal(lines.filter((l) => l.msg === 'sftp connection refused').length, 1, 'four refusals, one log line (the rest are counted for a summary)')
})

t.test('MaxStartups between start and full: refused at random, never past full', async (t) => {
  let refusedAt10 = 0
  for (let i = 0; i < 200; i++) {
    const s = new Startups({ start: 10, rate: 30, full: 100, perAddress: 1000 }, Math.random)
    for (let k = 0; k < 10; k++) if (typeof s.enter() === 'string') t.fail('below start: never refused')
    if (typeof s.enter() === 'string') refusedAt10++
  }
  t.ok(refusedAt10 > 20 && refusedAt10 < 120, `at start, about 30% refused (${refusedAt10} of 200)`)
  const s = new Startups({ start: 10, rate: 30, full: 100, perAddress: 1000 })
  for (let i = 0; i < 5000; i++) s.enter()
  t.ok(s.total <= 100 && s.total >= 10, `5000 attempts held at most full (${s.total})`)
  const ladder = new Startups({ start: 10, rate: 30, full: 100, perAddress: 1000 }, () => 0.5)
  let admitted = 0
  while (typeof ladder.enter() === 'function') admitted++
  // p = 0.3 + 0.7 * (n - 10) / 90 reaches 0.5 at n = 35.7: the 36th is refused.
  t.equal(admitted, 36, 'the refusal rate rises linearly from start to full')
  const release = ladder.enterFrom('192.0.2.1')
  t.type(release, 'function', 'per address: counted')
})

t.test('a connection that does not finish its key exchange is dropped after the short grace, not the login grace', async (t) => {
  const { lines, logger } = recorder()
  const { login } = await startGateway(t, { logger, sftp: { kex_grace_seconds: 1, login_grace_seconds: 120 } })
  const silent = await raw(t, login.port, '127.0.0.5', 'SSH-2.0-stalled\r\n')
  t.equal(silent.outcome, 'admitted', 'banner exchanged')
  t.ok(await closed(silent.socket, 30_000), 'closed by the server long before the 120 s login grace')
  t.ok(lines.some((l) => l.msg === 'sftp key exchange not finished in time: connection closed'), 'and logged')

  // A client that finished its key exchange has the login grace: it may log in slowly.
  const slow = await ssh2Sftp(t, login, {
    authHandler: (_methods: unknown, _partial: unknown, next: (m: unknown) => void) => {
      setTimeout(() => next({ type: 'password', username: login.user, password: login.password }), 2500)
    },
  })
  t.ok(Array.isArray(await call(slow.sftp.readdir.bind(slow.sftp), '.')), 'logged in 2.5 s after its key exchange (past the 1 s key exchange grace)')
})

t.test('the door caps its connections of every kind, closing new ones at once, logged once', async (t) => {
  const { lines, logger } = recorder()
  const { login } = await startGateway(t, { logger, sftp: { max_connections: 3 } })
  const { sftp } = await ssh2Sftp(t, login)
  const held = await Promise.all([1, 2].map(() => raw(t, login.port, '127.0.0.6')))
  t.same(held.map((c) => c.outcome), ['admitted', 'admitted'], 'up to the cap')
  const over = await Promise.all([1, 2, 3].map(() => raw(t, login.port, '127.0.0.7')))
  t.same(over.map((c) => c.outcome), ['refused', 'refused', 'refused'], 'past it, closed at once (no descriptor held)')
  t.ok(Array.isArray(await call(sftp.readdir.bind(sftp), '.')), 'the connections held are served')
  t.equal(lines.filter((l) => l.msg === 'sftp connection limit reached: new connections are closed at once').length, 1, 'logged once')
  held[0]!.socket.destroy()
  let admitted = false
  for (const deadline = Date.now() + 20_000; !admitted && Date.now() < deadline; ) admitted = (await raw(t, login.port, '127.0.0.7')).outcome === 'admitted'
  t.ok(admitted, 'a place freed is taken again')
})
