/**
 * @module test/front/admin.test
 * The admin API over real HTTP (docs/api.md, "Admin API"): login, admin tokens
 * that are not user tokens, the fixed delay and per-address throttle, the off
 * state, keys, shares, gateway users, status.
 */
import t from 'tap'
import { MAX_FAILURES } from '../../front/admin.js'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'
import { ADMIN_PASSWORD, adminToken, createShare, expectError, viaShare } from '../helpers/share.js'

const login = (url: string, body: unknown) => fetch(`${url}/admin/api/session`, { method: 'POST', body: JSON.stringify(body) })

t.test('with no admin password the admin API is off, and says how to turn it on', async (t) => {
  const { url } = await startTestServer(t)
  const res = await login(url, { password: 'anything' })
  t.equal(res.status, 403)
  t.match(((await res.json()) as { message: string }).message, /FILEGATE_ADMIN_PASSWORD/)
  t.equal((await fetch(`${url}/admin/api/keys`)).status, 403)
})

t.test('login: right password → admin token; wrong → 401 after a delay; user tokens are not admin tokens', async (t) => {
  const { url } = await startTestServer(t, { admin_password: ADMIN_PASSWORD })
  const t0 = Date.now()
  await expectError(t, await login(url, { password: 'wrong password' }), 401, 'NOT_AUTHENTICATED', 'wrong password')
  t.ok(Date.now() - t0 >= 250, 'the failure waits')
  const admin = await adminToken(url)
  t.equal((await api(url, admin)('GET', '/admin/api/status')).status, 200, 'the admin token works')
  await expectError(t, await fetch(`${url}/admin/api/status`), 401, 'NOT_AUTHENTICATED', 'no token')
  const user = await tmpSession(url)
  await expectError(t, await api(url, user)('GET', '/admin/api/keys'), 401, 'NOT_AUTHENTICATED', 'a user token on the admin API')
  await expectError(t, await api(url, admin)('GET', '/api/files/ls', { path: '/' }), 401, 'NOT_AUTHENTICATED', 'an admin token on the file API')
})

t.test('repeated failures from one address → 429, even with the right password', async (t) => {
  const { url } = await startTestServer(t, { admin_password: ADMIN_PASSWORD })
  await Promise.all(Array.from({ length: MAX_FAILURES }, () => login(url, { password: 'nope nope' }).then((r) => r.text())))
  await expectError(t, await login(url, { password: ADMIN_PASSWORD }), 429, 'RATE_LIMITED', 'after too many failures')
})

t.test('shares: the admin lists all and revokes any', async (t) => {
  const { url } = await startTestServer(t, { admin_password: ADMIN_PASSWORD })
  const alice = await tmpSession(url, 'alice')
  const bob = await tmpSession(url, 'bob')
  const s1 = await createShare(url, alice, { path: '/' })
  const s2 = await createShare(url, bob, { path: '/', password: 'pw' })
  const admin = await adminToken(url)
  const res = await api(url, admin)('GET', '/admin/api/shares')
  const text = await res.text()
  const list = (JSON.parse(text) as { results: { id: string; owner: string; has_password: boolean }[] }).results
  t.same(list.map((s) => s.id).sort(), [s1.id, s2.id].sort())
  t.notMatch(text, /scrypt|sealed/, 'no secrets')
  t.equal((await api(url, admin)('DELETE', `/admin/api/shares/${s1.id}`)).status, 200)
  await expectError(t, await viaShare(url, s1.id)('GET', '/api/files/ls', { path: '/' }), 404, 'NOT_FOUND', 'the revoked share')
  await expectError(t, await api(url, admin)('DELETE', `/admin/api/shares/${s1.id}`), 404, 'NOT_FOUND', 'twice')
})

t.test('gateway users: add, list (no hash), refuse duplicates and bad input, remove', async (t) => {
  const { url } = await startTestServer(t, { admin_password: ADMIN_PASSWORD })
  const a = api(url, await adminToken(url))
  const add = (body: unknown) => a('POST', '/admin/api/users', {}, { body: JSON.stringify(body) })
  const res = await add({ name: 'sftp-bob', password: 'bob password', connection: 'tmp', root: '/home/bob/', read_only: true })
  t.equal(res.status, 200)
  t.match(((await res.json()) as { result: unknown }).result, { name: 'sftp-bob', connection: 'tmp', root: '/home/bob', read_only: true })
  await expectError(t, await add({ name: 'sftp-bob', password: 'bob password', connection: 'tmp' }), 409, 'CONFLICT', 'duplicate')
  await expectError(t, await add({ name: 'x', password: 'short', connection: 'tmp' }), 400, 'INVALID_INPUT', 'short password')
  await expectError(t, await add({ name: 'x', password: 'long enough', connection: 'nas' }), 400, 'INVALID_INPUT', 'unknown connection')
  await expectError(t, await add({ name: 'a b', password: 'long enough', connection: 'tmp' }), 400, 'INVALID_INPUT', 'bad name')
  const text = await (await a('GET', '/admin/api/users')).text()
  t.match(text, /sftp-bob/)
  t.notMatch(text, /scrypt|"password"/, 'no password or hash listed')
  t.equal((await a('DELETE', '/admin/api/users/sftp-bob')).status, 200)
  await expectError(t, await a('DELETE', '/admin/api/users/sftp-bob'), 404, 'NOT_FOUND', 'removed')
})

t.test('status: version, uptime, sessions, transfers, pool', async (t) => {
  const { url } = await startTestServer(t, { admin_password: ADMIN_PASSWORD })
  await tmpSession(url)
  const res = await api(url, await adminToken(url))('GET', '/admin/api/status')
  const r = ((await res.json()) as { result: Record<string, unknown> }).result
  t.match(r, { version: /^\d+\.\d+\.\d+/, uptime_ms: Number, sessions_issued: 1, transfers_in_flight: Number, pool: Object })
})

t.test('the console page is served by filegate itself, with a strict CSP', async (t) => {
  const { url } = await startTestServer(t, { admin_password: ADMIN_PASSWORD })
  const page = await fetch(`${url}/admin`)
  t.equal(page.status, 200)
  t.match(page.headers.get('content-type') ?? '', /text\/html/)
  t.match(page.headers.get('content-security-policy') ?? '', /default-src 'self'/)
  const html = await page.text()
  t.notMatch(html, /(src|href)="(https?:)?\/\//, "nothing fetched from elsewhere")
  t.equal((await fetch(`${url}/admin/console.js`)).status, 200)
  t.equal((await fetch(`${url}/admin/console.css`)).status, 200)
  t.equal((await fetch(`${url}/admin/nope.js`)).status, 404)
})

t.test('DELETE /admin/api/session revokes the admin token, also across a restart', async (t) => {
  const dataDir = t.testdir()
  const first = await startTestServer(t, { admin_password: ADMIN_PASSWORD, data_dir: dataDir })
  const gone = await adminToken(first.url)
  const kept = await adminToken(first.url)
  t.equal((await api(first.url, gone)('DELETE', '/admin/api/session')).status, 200, 'log out')
  await expectError(t, await api(first.url, gone)('GET', '/admin/api/status'), 401, 'NOT_AUTHENTICATED', 'the revoked token')
  await expectError(t, await api(first.url, gone)('DELETE', '/admin/api/session'), 401, 'NOT_AUTHENTICATED', 'logging out twice')
  t.equal((await api(first.url, kept)('GET', '/admin/api/status')).status, 200, 'another admin token still works')
  await expectError(t, await fetch(`${first.url}/admin/api/session`, { method: 'DELETE' }), 401, 'NOT_AUTHENTICATED', 'no token')
  await first.app.close(0)
  const second = await startTestServer(t, { admin_password: ADMIN_PASSWORD, data_dir: dataDir })
  await expectError(t, await api(second.url, gone)('GET', '/admin/api/keys'), 401, 'NOT_AUTHENTICATED', 'still revoked after a restart')
  t.equal((await api(second.url, kept)('GET', '/admin/api/keys')).status, 200, 'the other token survives the restart')
})
