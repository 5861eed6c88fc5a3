/**
 * @module test/front/throttle.test
 * Password throttles an attacker cannot reset (issue 10, item 3), over real HTTP:
 * a right password on one's own share gives nothing back against another share;
 * failed logins from more than 10,000 other addresses (loopback 127.x.y.z, which
 * the server sees as distinct peers) give a locked-out address nothing back;
 * malformed credentials are counted and delayed like wrong ones; failures at two
 * nodes sharing one store add up. And the counts themselves: kept in the store,
 * lock-outs kept, IPv6 by /64.
 */
import { request } from 'node:http'
import t from 'tap'
import { MAX_FAILURES } from '../../front/admin.js'
import { SHARE_PASSWORD_FAILURES } from '../../front/shares.js'
import { openSqliteState } from '../../front/state/sqlite-state.js'
import { Throttle, addressKey } from '../../front/throttle.js'
import { startTestServer, tmpSession } from '../helpers/filegate.js'
import { ADMIN_PASSWORD, createShare, expectError, viaShare } from '../helpers/share.js'

/** One request from a chosen loopback source address (a fresh connection). */
function from(localAddress: string, url: string, method: string, path: string, body?: string, headers: Record<string, string> = {}): Promise<number> {
  const u = new URL(path, url)
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method, path: u.pathname + u.search, localAddress, agent: false, headers }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode!))
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** Runs `fn` over `items` with at most `limit` at a time. */
async function pool<T, R>(items: readonly T[], limit: number, fn: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = []
  let next = 0
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const i = next++
        out[i] = await fn(items[i]!)
      }
    }),
  )
  return out
}

t.test("a right password on one's own share gives nothing back against another share", async (t) => {
  const { url } = await startTestServer(t)
  const alice = await tmpSession(url, 'alice')
  const mallory = await tmpSession(url, 'mallory')
  const victim = await createShare(url, alice, { path: '/', password: 'alice secret' })
  const own = await createShare(url, mallory, { path: '/', password: 'mallory pass' })
  const guess = (pw: string) => viaShare(url, victim.id)('GET', '/api/files/ls', { path: '/' }, { headers: { 'x-share-password': pw } })
  const statuses: number[] = []
  for (let round = 0; round < 3; round++) {
    const wrong = await Promise.all(Array.from({ length: SHARE_PASSWORD_FAILURES - 1 }, (_, i) => guess(`guess ${round}-${i}`).then((r) => r.status)))
    statuses.push(...wrong)
    const mine = await viaShare(url, own.id)('GET', '/api/files/ls', { path: '/' }, { headers: { 'x-share-password': 'mallory pass' } })
    t.equal(mine.status, 200, `round ${round}: the right password on the attacker's own share works`)
  }
  t.equal(statuses.filter((s) => s === 401).length, SHARE_PASSWORD_FAILURES, `exactly ${SHARE_PASSWORD_FAILURES} guesses were checked against the victim's share`)
  t.ok(statuses.filter((s) => s === 429).length >= SHARE_PASSWORD_FAILURES - 2, 'the rest were refused with 429')
  await expectError(t, await guess('alice secret'), 429, 'RATE_LIMITED', "the victim's share stays locked for this address, even with its right password")
})

t.test('failed logins from 10,010 other addresses give a locked-out address nothing back', async (t) => {
  const { url } = await startTestServer(t, { admin_password: ADMIN_PASSWORD })
  const login = (addr: string, body: string) => from(addr, url, 'POST', '/admin/api/session', body)
  const locked = '127.0.0.2'
  const first = await Promise.all(Array.from({ length: MAX_FAILURES }, () => login(locked, JSON.stringify({ password: 'wrong password' }))))
  t.same([...new Set(first)], [401], 'the first failures are 401')
  t.equal(await login(locked, JSON.stringify({ password: ADMIN_PASSWORD })), 429, 'then the address is locked out, right password or not')

  // 10,010 other peers, one failed login each (non-string passwords: no hash to wait for).
  const others = Array.from({ length: 10_010 }, (_, i) => `127.1.${Math.floor(i / 250)}.${(i % 250) + 1}`)
  const flood = await pool(others, 400, (addr) => login(addr, JSON.stringify({ password: 12345 })))
  t.equal(new Set(others).size, 10_010, 'distinct addresses')
  t.same([...new Set(flood)], [401], 'each of them failed once')

  t.equal(await login(locked, JSON.stringify({ password: ADMIN_PASSWORD })), 429, 'the locked-out address is still locked out')
  t.equal(await login('127.0.0.3', JSON.stringify({ password: ADMIN_PASSWORD })), 200, 'an address that did not fail logs in')
})

t.test('failed logins at two nodes sharing one store add up to one lock-out', async (t) => {
  const a = await startTestServer(t, { admin_password: ADMIN_PASSWORD })
  const b = await startTestServer(t, { admin_password: ADMIN_PASSWORD, data_dir: a.dataDir })
  const login = (url: string, password: string) => fetch(`${url}/admin/api/session`, { method: 'POST', body: JSON.stringify({ password }) }).then((r) => r.status)
  const statuses: number[] = []
  for (let i = 0; i < MAX_FAILURES; i++) statuses.push(await login(i % 2 === 0 ? a.url : b.url, 'wrong password'))
  t.same([...new Set(statuses)], [401], `${MAX_FAILURES} failures, alternating between the nodes`)
  t.equal(await login(a.url, ADMIN_PASSWORD), 429, 'locked out at one node')
  t.equal(await login(b.url, ADMIN_PASSWORD), 429, 'and at the other')
})

t.test('malformed credentials are counted and delayed like wrong ones', async (t) => {
  const { url } = await startTestServer(t, { admin_password: ADMIN_PASSWORD })
  const login = (body: string) => fetch(`${url}/admin/api/session`, { method: 'POST', body })
  for (const [what, body] of [
    ['a body that is not JSON', 'password=hunter2'],
    ['a password that is not a string', JSON.stringify({ password: ['x'] })],
    ['no password', JSON.stringify({ pass: 'x' })],
    ['a password of 2,000 characters', JSON.stringify({ password: 'x'.repeat(2000) })],
  ] as const) {
    const t0 = Date.now()
    await expectError(t, await login(body), 401, 'NOT_AUTHENTICATED', what)
    t.ok(Date.now() - t0 >= 250, `${what}: waits the same delay as a wrong password`)
  }
  // Those four counted: one more failure uses up the five attempts.
  await expectError(t, await login(JSON.stringify({ password: 'wrong password' })), 401, 'NOT_AUTHENTICATED', 'the fifth failure')
  await expectError(t, await login(JSON.stringify({ password: ADMIN_PASSWORD })), 429, 'RATE_LIMITED', 'malformed attempts counted towards the limit')
})

t.test('counts kept in the store: lock-outs kept, scopes and throttles apart, shared by every throttle on one store', async (t) => {
  const state = await openSqliteState(t.testdir())
  t.teardown(() => state.close())
  const th = new Throttle({ state, max: 3, windowMs: 60_000, what: 'tests' })
  for (let i = 0; i < 3; i++) await th.attempt('s', '10.0.0.1')
  await t.rejects(th.attempt('s', '10.0.0.1'), { code: 'RATE_LIMITED' }, 'locked out after 3')
  await (await th.begin('other', '10.0.0.1')).right('forget')
  await t.rejects(th.attempt('s', '10.0.0.1'), { code: 'RATE_LIMITED' }, 'a success in another scope changes nothing')
  await new Throttle({ state, max: 3, windowMs: 60_000, what: 'other tests' }).attempt('s', '10.0.0.1')
  for (let i = 0; i < 1000; i++) await th.attempt('s', `10.1.${i >> 8}.${i & 255}`)
  await t.rejects(th.attempt('s', '10.0.0.1'), { code: 'RATE_LIMITED' }, 'the locked-out address is still locked out after 1,000 others')
  const node2 = new Throttle({ state, max: 3, windowMs: 60_000, what: 'tests' })
  await t.rejects(node2.attempt('s', '10.0.0.1'), { code: 'RATE_LIMITED' }, 'another node on the same store sees the lock-out')
  await th.attempt('s', '10.0.0.2')
  await node2.attempt('s', '10.0.0.2')
  await th.attempt('s', '10.0.0.2')
  await t.rejects(node2.attempt('s', '10.0.0.2'), { code: 'RATE_LIMITED' }, 'attempts made at two nodes add up')
  const short = new Throttle({ state, max: 1, windowMs: 200, what: 'short' })
  await short.attempt('s', '10.0.0.3')
  await t.rejects(short.attempt('s', '10.0.0.3'), { code: 'RATE_LIMITED' })
  await new Promise((r) => setTimeout(r, 250))
  await short.attempt('s', '10.0.0.3') // the window has passed: a new one
  t.pass('a window that has passed gives the attempts back')
})

t.test('IPv6 addresses count by their /64; IPv4-mapped ones as IPv4', async (t) => {
  t.equal(addressKey('2001:db8:1:2::1'), addressKey('2001:db8:1:2:ffff:eeee:dddd:cccc'), 'one /64')
  t.equal(addressKey('2001:0db8:0001:0002:0000:0000:0000:0001'), addressKey('2001:db8:1:2::9'), 'written in full or short')
  t.not(addressKey('2001:db8:1:2::1'), addressKey('2001:db8:1:3::1'), 'another /64')
  t.equal(addressKey('::ffff:127.0.0.5'), '127.0.0.5')
  t.equal(addressKey('0000:0000:0000:0000:0000:ffff:7f00:0001'), '127.0.0.1')
  t.not(addressKey('::ffff:10.0.0.1'), addressKey('::ffff:10.0.0.2'), 'mapped IPv4 addresses stay apart')
  const state = await openSqliteState(t.testdir())
  t.teardown(() => state.close())
  const th = new Throttle({ state, max: 2, windowMs: 60_000, what: 'tests' })
  await th.attempt('s', '2001:db8:1:2::1')
  await th.attempt('s', '2001:db8:1:2::2')
  await t.rejects(th.attempt('s', '2001:db8:1:2::3'), { code: 'RATE_LIMITED' }, 'rotating addresses inside a /64 does not help')
})

t.test('a right attempt takes back its own count, not the failures before it; a refused one counts nothing; near the limit, attempts wait for those being checked', async (t) => {
  const state = await openSqliteState(t.testdir())
  t.teardown(() => state.close())
  const th = new Throttle({ state, max: 3, windowMs: 60_000, what: 'tries' })
  const count = async () => (await state.throttlePeek(`tries\t10.0.0.1\ts`, Date.now()))?.count ?? 0
  await (await th.begin('s', '10.0.0.1')).wrong()
  await (await th.begin('s', '10.0.0.1')).wrong()
  const third = await th.begin('s', '10.0.0.1')
  t.equal(await count(), 3, 'an attempt being checked is counted')
  let fourthIn = false
  const fourth = th.begin('s', '10.0.0.1').then((a) => ((fourthIn = true), a))
  await new Promise((r) => setTimeout(r, 100))
  t.equal(fourthIn, false, 'a fourth waits while the third is being checked')
  t.equal(await count(), 3, 'and is not counted meanwhile')
  await third.right()
  const admitted = await fourth
  t.ok(fourthIn, 'the third was right: the fourth is checked')
  t.equal(await count(), 3, 'two failures and the fourth, the right third taken back')
  await admitted.wrong()
  await t.rejects(th.begin('s', '10.0.0.1'), { code: 'RATE_LIMITED' }, 'three failures: locked')
  await t.rejects(th.begin('s', '10.0.0.1'), { code: 'RATE_LIMITED' }, 'still locked')
  t.equal(await count(), 3, 'refused attempts are not counted')
  const last = await th.begin('s', '10.0.0.9')
  await last.right()
  await last.right()
  t.equal(await state.throttlePeek(`tries\t10.0.0.9\ts`, Date.now()), null, 'a ticket settles once: nothing given in advance')
})

t.test('check and failed, for signatures: a success counts nothing, failures lock out as attempts do', async (t) => {
  const state = await openSqliteState(t.testdir())
  t.teardown(() => state.close())
  const th = new Throttle({ state, max: 3, windowMs: 60_000, what: 'signatures' })
  for (let i = 0; i < 10; i++) await th.check('s', '10.0.0.1')
  t.equal(await state.throttlePeek(`signatures\t10.0.0.1\ts`, Date.now()), null, 'ten checks that succeeded left no count')
  await th.failed('s', '10.0.0.1')
  await th.failed('s', '10.0.0.1')
  await th.check('s', '10.0.0.1')
  await th.failed('s', '10.0.0.1')
  await t.rejects(th.check('s', '10.0.0.1'), { code: 'RATE_LIMITED' }, 'three failures: refused, right credential or not')
  t.match(await state.throttlePeek(`signatures\t10.0.0.1\ts`, Date.now()), { count: 3 }, 'a check counts nothing, even refused')
  t.equal(await state.throttlePeek(`signatures\t10.0.0.1\ts`, Date.now() + 60_000), null, 'nothing once the window has ended')
  await t.rejects(th.attempt('s', '10.0.0.1'), { code: 'RATE_LIMITED' }, 'the same count as attempts')
})
