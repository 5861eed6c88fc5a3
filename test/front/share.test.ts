/**
 * @module test/front/share.test
 * Share links over real HTTP (docs/api.md): creation, listing and
 * removal by the owner only, `?share=` on every file endpoint, the rights
 * can_read / can_upload / can_write, expiry, passwords, the chroot, file shares,
 * and shares surviving the owner's logout.
 */
import { readFileSync, symlinkSync } from 'node:fs'
import t, { type Test } from 'tap'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'
import { createShare, expectError, viaShare } from '../helpers/share.js'
import { SHARE_PASSWORD_FAILURES } from '../../front/shares.js'

async function setup(t: Test) {
  const srv = await startTestServer(t)
  const token = await tmpSession(srv.url, 'alice')
  const a = api(srv.url, token)
  await a('POST', '/api/files/mkdir', { path: '/docs/sub' })
  await a('POST', '/api/files/cat', { path: '/docs/a.txt' }, { body: 'hello' })
  await a('POST', '/api/files/cat', { path: '/secret.txt' }, { body: 'outside' })
  return { ...srv, token, a }
}

const ALL_KEYS = ['can_create_directory', 'can_create_file', 'can_delete', 'can_move', 'can_read', 'can_rename', 'can_share', 'can_upload']

t.test('POST /api/share answers the share without secrets; ids are random and URL-safe', async (t) => {
  const { url, token } = await setup(t)
  const res = await api(url, token)('POST', '/api/share', {}, { body: JSON.stringify({ path: '/docs/', can_read: true, password: 'pw', expire: null }) })
  t.equal(res.status, 200)
  const text = await res.text()
  const s = (JSON.parse(text) as { result: Record<string, unknown> }).result
  t.match(s, { path: '/docs', type: 'directory', can_read: true, can_write: false, can_upload: false, has_password: true, expire: null })
  t.match(s.id, /^[A-Za-z0-9_-]{22,}$/, 'at least 128 bits, base64url')
  t.notMatch(text, /scrypt|sealed|password_hash|"pw"/, 'no hash, credentials or password in the answer')
  const other = await createShare(url, token, { path: '/docs' })
  t.not(other.id, s.id)
  await expectError(t, await api(url, token)('POST', '/api/share', {}, { body: JSON.stringify({ path: '/nope' }) }), 404, 'NOT_FOUND', 'missing path')
  await expectError(t, await api(url, token)('POST', '/api/share', {}, { body: JSON.stringify({ path: '/docs', expire: Date.now() - 1 }) }), 400, 'INVALID_INPUT', 'expire in the past')
  await expectError(t, await api(url, token)('POST', '/api/share', {}, { body: JSON.stringify({ path: '/docs', can_read: 'yes' }) }), 400, 'INVALID_INPUT', 'non-boolean right')
  await expectError(t, await fetch(`${url}/api/share`, { method: 'POST', body: '{"path":"/docs"}' }), 401, 'NOT_AUTHENTICATED', 'no token')
})

t.test('a read-only share: ls/cat/zip work, with / as the share path; writes are 403; permissions listed', async (t) => {
  const { url, token } = await setup(t)
  const s = await createShare(url, token, { path: '/docs', can_read: true })
  const v = viaShare(url, s.id)
  const ls = await v('GET', '/api/files/ls', { path: '/' })
  t.equal(ls.status, 200)
  const body = (await ls.json()) as { results: { name: string }[]; permissions: Record<string, boolean> }
  t.same(body.results.map((e) => e.name), ['a.txt', 'sub'], "the share's folder is /")
  t.same(Object.keys(body.permissions).sort(), ALL_KEYS, 'all 8 permission keys')
  t.same(body.permissions, { can_read: true, can_create_file: false, can_create_directory: false, can_rename: false, can_move: false, can_upload: false, can_delete: false, can_share: false })
  t.equal(await (await v('GET', '/api/files/cat', { path: '/a.txt' })).text(), 'hello')
  t.equal((await v('GET', '/api/files/zip', { path: '/sub/' })).status, 200)
  await expectError(t, await v('POST', '/api/files/cat', { path: '/new.txt' }, { body: 'x' }), 403, 'FORBIDDEN', 'upload')
  await expectError(t, await v('POST', '/api/files/mkdir', { path: '/d' }), 403, 'FORBIDDEN', 'mkdir')
  await expectError(t, await v('POST', '/api/files/touch', { path: '/t' }), 403, 'FORBIDDEN', 'touch')
  await expectError(t, await v('POST', '/api/files/mv', { from: '/a.txt', to: '/b.txt' }), 403, 'FORBIDDEN', 'mv')
  await expectError(t, await v('POST', '/api/files/rm', { path: '/a.txt' }), 403, 'FORBIDDEN', 'rm')
  await expectError(t, await v('POST', '/api/share', {}, { body: '{"path":"/"}' }), 403, 'FORBIDDEN', 'a share cannot make shares')
  await expectError(t, await v('GET', '/api/session'), 401, 'NOT_AUTHENTICATED', 'a share is not a session')
  await expectError(t, await v('DELETE', '/api/session'), 401, 'NOT_AUTHENTICATED', 'a share cannot be "logged out"')
})

t.test('nothing above the share can be reached; errors do not show the outer path', async (t) => {
  const { url, token } = await setup(t)
  const s = await createShare(url, token, { path: '/docs', can_read: true, can_write: true })
  const v = viaShare(url, s.id)
  await expectError(t, await v('GET', '/api/files/cat', { path: '/../secret.txt' }), 400, 'INVALID_INPUT', '.. above the share root')
  await expectError(t, await v('GET', '/api/files/cat', { path: '/sub/../../secret.txt' }), 400, 'INVALID_INPUT', '.. through a subfolder')
  const res = await v('GET', '/api/files/cat', { path: '/secret.txt' })
  const text = await res.text()
  t.equal(res.status, 404, 'the outer file is not inside the share')
  t.notMatch(text, /docs/, 'the error does not reveal the share folder')
  await expectError(t, await v('POST', '/api/files/rm', { path: '/' }), 403, 'FORBIDDEN', 'the share root cannot be removed')
  t.equal((await v('POST', '/api/files/mv', { from: '/a.txt', to: '/sub/a.txt' })).status, 200, 'mv inside the share')
  const check = await api(url, token)('GET', '/api/files/cat', { path: '/docs/sub/a.txt' })
  t.equal(await check.text(), 'hello', 'landed in the owner storage under the share path')
})

t.test('a symlink inside the share that leads elsewhere in the owner storage is refused', async (t) => {
  const { url, token, dataDir } = await setup(t)
  const docs = `${dataDir}/tmp/alice/docs`
  symlinkSync('../secret.txt', `${docs}/link.txt`)
  symlinkSync('..', `${docs}/up`)
  const s = await createShare(url, token, { path: '/docs', can_write: true })
  const v = viaShare(url, s.id)
  const names = ((await (await v('GET', '/api/files/ls', { path: '/' })).json()) as { results: { name: string }[] }).results.map((e) => e.name)
  t.notOk(names.includes('link.txt') || names.includes('up'), 'links leading out of the share are not listed')
  const cat = await v('GET', '/api/files/cat', { path: '/link.txt' })
  t.not(cat.status, 200, 'a file link leading out is not followed')
  t.not(await cat.text(), 'outside', 'the outer content is not served')
  t.not((await v('GET', '/api/files/ls', { path: '/up' })).status, 200, 'a folder link leading out is not followed')
  t.not((await v('GET', '/api/files/cat', { path: '/up/secret.txt' })).status, 200)
  // The owner, rooted above, may follow the same link: it stays inside their storage.
  t.equal(await (await api(url, token)('GET', '/api/files/cat', { path: '/docs/link.txt' })).text(), 'outside')
})

t.test('can_upload creates new files and folders but never replaces one', async (t) => {
  const { url, token } = await setup(t)
  const s = await createShare(url, token, { path: '/docs', can_read: false, can_upload: true })
  const v = viaShare(url, s.id)
  t.equal((await v('POST', '/api/files/cat', { path: '/drop/new.txt' }, { body: 'new' })).status, 200, 'upload a new file')
  t.equal((await v('POST', '/api/files/mkdir', { path: '/made' })).status, 200, 'mkdir')
  t.equal((await v('POST', '/api/files/touch', { path: '/t.txt' })).status, 200, 'touch')
  await expectError(t, await v('POST', '/api/files/cat', { path: '/a.txt' }, { body: 'evil' }), 403, 'FORBIDDEN', 'replacing an existing file')
  t.equal(await (await api(url, token)('GET', '/api/files/cat', { path: '/docs/a.txt' })).text(), 'hello', 'the old content is intact')
  await expectError(t, await v('GET', '/api/files/ls', { path: '/' }), 403, 'FORBIDDEN', 'no can_read: no listing')
  await expectError(t, await v('GET', '/api/files/cat', { path: '/a.txt' }), 403, 'FORBIDDEN', 'no can_read: no download')
  await expectError(t, await v('POST', '/api/files/rm', { path: '/t.txt' }), 403, 'FORBIDDEN', 'no rm')
  await expectError(t, await v('POST', '/api/files/mv', { from: '/t.txt', to: '/u.txt' }), 403, 'FORBIDDEN', 'no mv')
  t.equal(await (await api(url, token)('GET', '/api/files/cat', { path: '/docs/drop/new.txt' })).text(), 'new')
})

t.test('can_write allows everything, including replace, mv and rm', async (t) => {
  const { url, token } = await setup(t)
  const s = await createShare(url, token, { path: '/docs', can_write: true })
  const v = viaShare(url, s.id)
  const perms = ((await (await v('GET', '/api/files/ls', { path: '/' })).json()) as { permissions: Record<string, boolean> }).permissions
  t.same(perms, { can_read: true, can_create_file: true, can_create_directory: true, can_rename: true, can_move: true, can_upload: true, can_delete: true, can_share: false })
  t.equal((await v('POST', '/api/files/cat', { path: '/a.txt' }, { body: 'replaced' })).status, 200)
  t.equal(await (await v('GET', '/api/files/cat', { path: '/a.txt' })).text(), 'replaced')
  t.equal((await v('POST', '/api/files/mv', { from: '/a.txt', to: '/b.txt' })).status, 200)
  t.equal((await v('POST', '/api/files/rm', { path: '/b.txt' })).status, 200)
})

t.test('unknown share 404, expired 410', async (t) => {
  const { url, token, dataDir } = await setup(t)
  await expectError(t, await viaShare(url, 'AAAAAAAAAAAAAAAAAAAAAA')('GET', '/api/files/ls', { path: '/' }), 404, 'NOT_FOUND', 'unknown share')
  await expectError(t, await viaShare(url, 'x')('GET', '/api/files/ls', { path: '/' }), 404, 'NOT_FOUND', 'malformed share id')
  const s = await createShare(url, token, { path: '/docs', expire: Date.now() + 400 })
  t.equal((await viaShare(url, s.id)('GET', '/api/files/ls', { path: '/' })).status, 200, 'before expiry')
  await new Promise((r) => setTimeout(r, 500))
  await expectError(t, await viaShare(url, s.id)('GET', '/api/files/ls', { path: '/' }), 410, 'GONE', 'after expiry')
  t.ok(dataDir)
})

t.test('a password-protected share needs X-Share-Password or Basic auth; wrong → 401 after a delay', async (t) => {
  const { url, token, dataDir } = await setup(t)
  const s = await createShare(url, token, { path: '/docs', password: 's3cret pass' })
  const v = viaShare(url, s.id)
  let t0 = Date.now()
  await expectError(t, await v('GET', '/api/files/ls', { path: '/' }), 401, 'NOT_AUTHENTICATED', 'no password')
  t.ok(Date.now() - t0 >= 250, 'a missing password waits')
  t0 = Date.now()
  await expectError(t, await v('GET', '/api/files/ls', { path: '/' }, { headers: { 'x-share-password': 'nope' } }), 401, 'NOT_AUTHENTICATED', 'wrong password')
  t.ok(Date.now() - t0 >= 250, 'a wrong password waits')
  t.equal((await v('GET', '/api/files/ls', { path: '/' }, { headers: { 'x-share-password': 's3cret pass' } })).status, 200, 'X-Share-Password')
  const basic = `Basic ${Buffer.from('anyone:s3cret pass').toString('base64')}`
  t.equal((await v('GET', '/api/files/ls', { path: '/' }, { headers: { authorization: basic } })).status, 200, 'Basic auth, any user')
  const file = (name: string) => { try { return readFileSync(`${dataDir}/state/${name}`).toString('latin1') } catch { return '' } }
  const db = file('state.db') + file('state.db-wal')
  t.notOk(db.includes('s3cret pass'), 'the password is not stored in clear')
  t.ok(db.includes('scrypt$'), 'a scrypt hash is stored')
})

t.test('guessing share passwords from one address is throttled (429)', async (t) => {
  const { url, token } = await setup(t)
  const s = await createShare(url, token, { path: '/docs', password: 'right one' })
  const v = viaShare(url, s.id)
  const wrong = () => v('GET', '/api/files/ls', { path: '/' }, { headers: { 'x-share-password': 'guess' } })
  const statuses = await Promise.all(Array.from({ length: SHARE_PASSWORD_FAILURES }, () => wrong().then((r) => r.status)))
  t.same([...new Set(statuses)], [401], 'the first attempts are 401')
  await expectError(t, await v('GET', '/api/files/ls', { path: '/' }, { headers: { 'x-share-password': 'right one' } }), 429, 'RATE_LIMITED', 'then 429, even with the right password')
})

t.test('a file share reaches only its file, addressed as /<name>', async (t) => {
  const { url, token } = await setup(t)
  const s = await createShare(url, token, { path: '/docs/a.txt', can_write: true })
  t.equal(s.type, 'file')
  const v = viaShare(url, s.id)
  const ls = (await (await v('GET', '/api/files/ls', { path: '/' })).json()) as { results: { name: string }[] }
  t.same(ls.results.map((e) => e.name), ['a.txt'], '/ lists the one file')
  t.equal(await (await v('GET', '/api/files/cat', { path: '/a.txt' })).text(), 'hello')
  await expectError(t, await v('GET', '/api/files/ls', { path: '/sub' }), 404, 'NOT_FOUND', 'a sibling folder')
  await expectError(t, await v('POST', '/api/files/cat', { path: '/other.txt' }, { body: 'x' }), 403, 'FORBIDDEN', 'writing a sibling')
})

t.test('list and delete: owner only; the share outlives the owner logout', async (t) => {
  const { url, token } = await setup(t)
  const bob = await tmpSession(url, 'bob')
  const s1 = await createShare(url, token, { path: '/docs' })
  const s2 = await createShare(url, token, { path: '/secret.txt' })
  const mine = async (tok: string, path: string) =>
    ((await (await api(url, tok)('GET', '/api/share', { path })).json()) as { results: { id: string }[] }).results.map((x) => x.id).sort()
  t.same(await mine(token, '/'), [s1.id, s2.id].sort(), 'all of alice')
  t.same(await mine(token, '/docs'), [s1.id], 'under /docs')
  t.same(await mine(bob, '/'), [], 'bob sees none of them')
  await expectError(t, await api(url, bob)('DELETE', `/api/share/${s1.id}`), 403, 'FORBIDDEN', 'bob deleting alice share')
  await expectError(t, await api(url, token)('DELETE', '/api/share/AAAAAAAAAAAAAAAAAAAAAA'), 404, 'NOT_FOUND', 'unknown id')
  t.equal((await api(url, token)('DELETE', '/api/session')).status, 200, 'alice logs out')
  t.equal((await viaShare(url, s1.id)('GET', '/api/files/cat', { path: '/a.txt' })).status, 200, 'the share still works')
  const again = await tmpSession(url, 'alice')
  t.equal((await api(url, again)('DELETE', `/api/share/${s1.id}`)).status, 200, 'the owner (same backendID, new session) deletes it')
  await expectError(t, await viaShare(url, s1.id)('GET', '/api/files/ls', { path: '/' }), 404, 'NOT_FOUND', 'a deleted share')
})

t.test('shares survive a restart', async (t) => {
  const dataDir = t.testdir()
  const first = await startTestServer(t, { data_dir: dataDir })
  const token = await tmpSession(first.url)
  await api(first.url, token)('POST', '/api/files/cat', { path: '/x.txt' }, { body: 'persisted' })
  const s = await createShare(first.url, token, { path: '/' })
  await first.app.close(0)
  const second = await startTestServer(t, { data_dir: dataDir })
  t.equal(await (await viaShare(second.url, s.id)('GET', '/api/files/cat', { path: '/x.txt' })).text(), 'persisted')
})
