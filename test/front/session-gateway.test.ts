/**
 * @module test/front/session-gateway.test
 * HTTP sessions of gateway users (docs/api.md, "Sessions"): `POST /api/session` with
 * `{"type":"gateway","user","password"}` against a real filegate whose users are made
 * through the admin API. The user's connection and root, its rights (a read-only user
 * is refused every write on every endpoint), the gateways' refusal and throttle for a
 * wrong password, and the end of its sessions when the user is removed or its password
 * changes (on this node at once, on another within REVALIDATE_MS).
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { GATEWAY_LOGIN_FAILURES, REVALIDATE_MS } from '../../front/gateway-login.js'
import { FAILURE_DELAY_MS, hashPassword } from '../../front/passwords.js'
import { api } from '../helpers/filegate.js'
import { gate } from '../helpers/gateway.js'
import { ADMIN_PASSWORD, adminToken, expectError } from '../helpers/share.js'

const login = (url: string, body: Record<string, unknown>) => fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify(body) })

async function token(url: string, user: string, password: string): Promise<string> {
  const res = await login(url, { type: 'gateway', user, password })
  const json = (await res.json()) as { status: string; result: { authorization: string; home: string } }
  if (json.status !== 'ok') throw new Error(`gateway session for ${user}: ${JSON.stringify(json)}`)
  return json.result.authorization
}

const names = async (res: Response) => ((await res.json()) as { results: { name: string }[] }).results.map((e) => e.name).sort()

const disk = { home: { 'notes.txt': 'the notes', docs: { 'a.txt': 'aaa' } }, 'secret.txt': 'outside the root' }
const onDisk = (d: string) => ({ connections: [{ label: 'disk', type: 'local', path: d, public: true }] })

t.test("a gateway user's session: its connection and root, writes allowed, no share links", async (t) => {
  const g = await gate(t, onDisk, disk)
  await g.addUser({ name: 'bob', password: 'bob password', connection: 'disk', root: '/home' })
  const a = api(g.url, await token(g.url, 'bob', 'bob password'))

  let res = await a('GET', '/api/files/ls', { path: '/' })
  const listing = (await res.clone().json()) as { permissions: Record<string, boolean> }
  t.same(await names(res), ['docs', 'notes.txt'], "the listing is the user's root, not the connection's")
  t.match(listing.permissions, { can_read: true, can_upload: true, can_delete: true, can_share: false })
  t.equal(await (await a('GET', '/api/files/cat', { path: '/notes.txt' })).text(), 'the notes')
  await expectError(t, await a('GET', '/api/files/cat', { path: '/../secret.txt' }), 400, 'INVALID_INPUT', 'a path above the root')

  t.equal((await a('POST', '/api/files/cat', { path: '/docs/new.txt' }, { body: 'written over http' })).status, 200, 'upload')
  t.equal(readFileSync(join(g.disk, 'home', 'docs', 'new.txt'), 'utf8'), 'written over http', 'the file lands under the root on disk')
  t.equal((await a('POST', '/api/files/mkdir', { path: '/made' })).status, 200, 'mkdir')
  t.ok(existsSync(join(g.disk, 'home', 'made')))
  await expectError(t, await a('POST', '/api/share', {}, { body: JSON.stringify({ path: '/docs' }) }), 403, 'FORBIDDEN', 'a share link (it would outlive the user)')

  const logged = g.logs.find((l) => l.msg === 'gateway login' && l.fields.door === 'http')
  t.match(logged, { fields: { user: 'bob', read_only: false } }, 'the login is logged as a gateway login at door http')
  t.notMatch(JSON.stringify(g.logs), /bob password/, 'never the password')
})

t.test('a read-only gateway user: ls, cat and zip; every write refused with 403 and nothing changes', async (t) => {
  const g = await gate(t, onDisk, disk)
  await g.addUser({ name: 'reader', password: 'reader password', connection: 'disk', root: '/home', read_only: true })
  const auth = await token(g.url, 'reader', 'reader password')
  const a = api(g.url, auth)
  const before = readdirSync(join(g.disk, 'home')).sort()

  const res = await a('GET', '/api/files/ls', { path: '/' })
  const listing = (await res.json()) as { permissions: Record<string, boolean> }
  t.same(listing.permissions, { can_read: true, can_create_file: false, can_create_directory: false, can_rename: false, can_move: false, can_upload: false, can_delete: false, can_share: false }, 'the listing says: reading only')
  t.equal(await (await a('GET', '/api/files/cat', { path: '/docs/a.txt' })).text(), 'aaa', 'cat')
  const zip = await a('GET', '/api/files/zip', { path: '/docs/' })
  t.equal(zip.status, 200, 'zip')
  t.equal(Buffer.from(await zip.arrayBuffer()).subarray(0, 2).toString(), 'PK')

  await expectError(t, await a('POST', '/api/files/cat', { path: '/new.txt' }, { body: 'x' }), 403, 'FORBIDDEN', 'upload')
  await expectError(t, await a('POST', '/api/files/cat', { path: '/notes.txt' }, { body: 'replaced' }), 403, 'FORBIDDEN', 'upload over a file')
  await expectError(t, await a('POST', '/api/files/mkdir', { path: '/d' }), 403, 'FORBIDDEN', 'mkdir')
  await expectError(t, await a('POST', '/api/files/touch', { path: '/t' }), 403, 'FORBIDDEN', 'touch')
  await expectError(t, await a('POST', '/api/files/mv', { from: '/notes.txt', to: '/moved.txt' }), 403, 'FORBIDDEN', 'mv')
  await expectError(t, await a('POST', '/api/files/rm', { path: '/notes.txt' }), 403, 'FORBIDDEN', 'rm')
  await expectError(t, await a('POST', '/api/share', {}, { body: JSON.stringify({ path: '/docs' }) }), 403, 'FORBIDDEN', 'share')
  const tus = await fetch(`${g.url}/api/files/tus`, {
    method: 'POST',
    headers: { authorization: `Bearer ${auth}`, 'tus-resumable': '1.0.0', 'upload-length': '5', 'upload-metadata': `path ${Buffer.from('/big.bin').toString('base64')}` },
  })
  t.equal(tus.status, 403, 'tus: an upload cannot even be started')
  t.match(await tus.text(), /FORBIDDEN|does not allow/)

  t.same(readdirSync(join(g.disk, 'home')).sort(), before, 'nothing was made, moved or removed')
  t.equal(readFileSync(join(g.disk, 'home', 'notes.txt'), 'utf8'), 'the notes', 'nothing was replaced')
})

t.test('a wrong password or an unknown user: the same delayed 401; the gateways’ throttle counts HTTP and other doors together', async (t) => {
  const g = await gate(t)
  await g.addUser({ name: 'bob', password: 'bob password', connection: 'tmp' })
  const answers: string[] = []
  for (const body of [
    { type: 'gateway', user: 'bob', password: 'Xyzzy-guess' },
    { type: 'gateway', user: 'nobody', password: 'bob password' },
  ]) {
    const t0 = Date.now()
    const res = await login(g.url, body)
    t.ok(Date.now() - t0 >= FAILURE_DELAY_MS - 20, `${body.user}: the refusal waits`)
    t.equal(res.status, 401)
    answers.push(await res.text())
  }
  t.equal(answers[0], answers[1], 'a wrong password and an unknown user get the very same answer')
  t.match(JSON.parse(answers[0]!), { status: 'error', code: 'NOT_AUTHENTICATED' })
  await expectError(t, await login(g.url, { type: 'gateway', user: 'bob' }), 400, 'INVALID_INPUT', 'no password')
  await expectError(t, await login(g.url, { type: 'gateway', user: 'me@disk', password: 'x' }), 400, 'INVALID_INPUT', 'a pass-through name')

  // Two failures counted above; the rest at the SFTP door, from the same address.
  const sftpFailures = GATEWAY_LOGIN_FAILURES - 2
  await Promise.all(Array.from({ length: sftpFailures }, (_, i) => g.login({ user: 'bob', password: `guess ${i}`, address: '127.0.0.1' })))
  await expectError(t, await login(g.url, { type: 'gateway', user: 'bob', password: 'bob password' }), 429, 'RATE_LIMITED', 'the right password from a throttled address')
  // The HTTP API's own doors keep their own counts.
  t.equal((await login(g.url, { type: 'tmp', userID: 'alice' })).status, 200, 'a tmp session from that address still works')
})

t.test("removing the gateway user or changing its password ends its HTTP sessions", async (t) => {
  const g = await gate(t)
  await g.addUser({ name: 'bob', password: 'bob password', connection: 'tmp' })
  await g.addUser({ name: 'carol', password: 'carol password', connection: 'tmp' })
  const admin = api(g.url, await adminToken(g.url, ADMIN_PASSWORD))
  const bob = api(g.url, await token(g.url, 'bob', 'bob password'))
  const carol = api(g.url, await token(g.url, 'carol', 'carol password'))
  t.equal((await bob('GET', '/api/files/ls', { path: '/' })).status, 200)
  t.equal((await carol('GET', '/api/files/ls', { path: '/' })).status, 200)

  t.equal((await admin('PATCH', '/admin/api/users/bob', {}, { body: JSON.stringify({ password: 'a new password' }) })).status, 200)
  await expectError(t, await bob('GET', '/api/files/ls', { path: '/' }), 401, 'NOT_AUTHENTICATED', 'after a new password, the old session')
  await expectError(t, await login(g.url, { type: 'gateway', user: 'bob', password: 'bob password' }), 401, 'NOT_AUTHENTICATED', 'the old password')
  t.equal((await api(g.url, await token(g.url, 'bob', 'a new password'))('GET', '/api/files/ls', { path: '/' })).status, 200, 'the new password logs in')

  t.equal((await admin('DELETE', '/admin/api/users/carol')).status, 200)
  await expectError(t, await carol('GET', '/api/files/ls', { path: '/' }), 401, 'NOT_AUTHENTICATED', 'after the user is removed, its session')
  await g.addUser({ name: 'carol', password: 'carol password', connection: 'tmp' })
  await expectError(t, await carol('GET', '/api/files/ls', { path: '/' }), 401, 'NOT_AUTHENTICATED', 'a user made anew with the same name and password does not revive it')
})

t.test('a new password set on another node (straight in the shared state store) ends the session within REVALIDATE_MS', async (t) => {
  const g = await gate(t)
  await g.addUser({ name: 'bob', password: 'bob password', connection: 'tmp' })
  const bob = api(g.url, await token(g.url, 'bob', 'bob password'))
  t.equal((await bob('GET', '/api/files/ls', { path: '/' })).status, 200)
  // What another node's admin API does, without this node's `changed` hook.
  t.ok(await g.ctx.state.updateGatewayUser('bob', { password_hash: await hashPassword('set elsewhere') }))
  const since = Date.now()
  let status = 200
  while (status === 200 && Date.now() - since < REVALIDATE_MS * 6) {
    await new Promise((r) => setTimeout(r, 200))
    status = (await bob('GET', '/api/files/ls', { path: '/' })).status
  }
  t.equal(status, 401, `the session ended (after ${Date.now() - since} ms)`)
})
