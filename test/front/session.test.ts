/**
 * @module test/front/session.test
 * Sessions over real HTTP (docs/api.md, "Sessions"): POST/GET/DELETE /api/session,
 * token validation, revocation that survives a restart, expiry, the server secret,
 * `local` connections and the isolation of tmp users.
 */
import { mkdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'

interface SessionAnswer {
  status: string
  result: { home: string; is_authenticated: boolean; backendID: string; authorization?: string }
}

const post = (url: string, body: unknown, raw = false) =>
  fetch(`${url}/api/session`, { method: 'POST', body: raw ? (body as string) : JSON.stringify(body) })

async function login(url: string, body: unknown): Promise<SessionAnswer> {
  const res = await post(url, body)
  const json = (await res.json()) as SessionAnswer
  if (res.status !== 200) throw new Error(`login failed (${res.status}): ${JSON.stringify(json)}`)
  return json
}

async function expectError(t: Test, res: Response, status: number, code: string, what: string): Promise<void> {
  t.equal(res.status, status, `${what}: HTTP ${status}`)
  t.match(res.headers.get('content-type') ?? '', /^application\/json/, `${what}: JSON`)
  const body = (await res.json()) as Record<string, unknown>
  t.same(Object.keys(body).sort(), ['code', 'message', 'status'], `${what}: the error envelope, nothing else`)
  t.equal(body.status, 'error', `${what}: status error`)
  t.equal(body.code, code, `${what}: code ${code}`)
  t.ok(typeof body.message === 'string' && body.message.length > 0, `${what}: a message`)
}

const getSession = (url: string, token: string) => api(url, token)('GET', '/api/session')
const ls = (url: string, token: string, path = '/') => api(url, token)('GET', '/api/files/ls', { path })

t.test('POST /api/session tmp answers the contract shape', async (t) => {
  const { url } = await startTestServer(t)
  const res = await post(url, { type: 'tmp', userID: 'alice' })
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type') ?? '', /^application\/json/)
  const json = (await res.json()) as SessionAnswer
  t.same(Object.keys(json).sort(), ['result', 'status'])
  t.equal(json.status, 'ok')
  t.same(Object.keys(json.result).sort(), ['authorization', 'backendID', 'home', 'is_authenticated'])
  t.equal(json.result.home, '/')
  t.equal(json.result.is_authenticated, true)
  t.ok(typeof json.result.backendID === 'string' && json.result.backendID.length > 0, 'backendID is a non-empty string')
  t.ok(typeof json.result.authorization === 'string' && json.result.authorization.length >= 40, 'authorization is a token')
  // The token works as a Bearer credential.
  t.equal((await ls(url, json.result.authorization!)).status, 200)
})

t.test('backendID is stable per userID and differs between users', async (t) => {
  const { url } = await startTestServer(t)
  const a1 = await login(url, { type: 'tmp', userID: 'alice' })
  const a2 = await login(url, { type: 'tmp', userID: 'alice' })
  const b = await login(url, { type: 'tmp', userID: 'bob' })
  t.equal(a1.result.backendID, a2.result.backendID, 'same login, same backendID')
  t.not(a1.result.backendID, b.result.backendID, 'another user, another backendID')
  t.not(a1.result.authorization, a2.result.authorization, 'each login gets its own token')
})

t.test('the token is opaque: it does not reveal the user id nor the server folder', async (t) => {
  const { url, dataDir } = await startTestServer(t)
  const userID = 'VisibleUserMarker42'
  const token = (await login(url, { type: 'tmp', userID })).result.authorization!
  t.notOk(token.includes(userID), 'user id not in the token text')
  const decoded = Buffer.from(token, 'base64url').toString('latin1')
  t.notOk(decoded.includes(userID), 'user id not in the decoded token bytes')
  t.notOk(decoded.includes(dataDir), 'data dir not in the decoded token bytes')
})

t.test('bad userID → 400 INVALID_INPUT', async (t) => {
  const { url } = await startTestServer(t)
  const bad: [string, unknown][] = [
    ['empty', ''],
    ['65 characters', 'a'.repeat(65)],
    ['../x', '../x'],
    ['a slash', 'a/b'],
    ['spaces', 'al ice'],
    ['a dot', 'al.ice'],
    ['a number, not a string', 42],
    ['missing', undefined],
  ]
  for (const [what, userID] of bad) {
    await expectError(t, await post(url, { type: 'tmp', userID }), 400, 'INVALID_INPUT', `userID ${what}`)
  }
  // The longest valid one is accepted.
  t.equal((await post(url, { type: 'tmp', userID: 'a'.repeat(64) })).status, 200, '64 characters accepted')
  t.equal((await post(url, { type: 'tmp', userID: 'A-z_09' })).status, 200, 'letters, digits, - and _ accepted')
})

t.test('malformed session requests → 400 INVALID_INPUT', async (t) => {
  const { url } = await startTestServer(t)
  await expectError(t, await post(url, '{"type":"tmp",', true), 400, 'INVALID_INPUT', 'bad JSON')
  await expectError(t, await fetch(`${url}/api/session`, { method: 'POST' }), 400, 'INVALID_INPUT', 'no body')
  await expectError(t, await post(url, [{ type: 'tmp', userID: 'alice' }]), 400, 'INVALID_INPUT', 'an array')
  await expectError(t, await post(url, 'tmp'), 400, 'INVALID_INPUT', 'a string')
  await expectError(t, await post(url, 42), 400, 'INVALID_INPUT', 'a number')
  await expectError(t, await post(url, null), 400, 'INVALID_INPUT', 'null')
  await expectError(t, await post(url, { userID: 'alice' }), 400, 'INVALID_INPUT', 'missing type')
})

t.test('types that are not configured → 403 FORBIDDEN', async (t) => {
  const { url } = await startTestServer(t)
  await expectError(t, await post(url, { type: 'local', path: '/' }), 403, 'FORBIDDEN', 'local')
  await expectError(t, await post(url, { type: 's3', access_key_id: 'x', secret_access_key: 'y' }), 403, 'FORBIDDEN', 's3')
  await expectError(t, await post(url, { type: 'sftp', hostname: 'localhost' }), 403, 'FORBIDDEN', 'sftp')
})

t.test('a configured local connection works by type and by label, fixed to its folder', async (t) => {
  const root = t.testdir({ data: {}, files: { 'planted.txt': 'planted here', sub: { 'deep.txt': 'deep' } }, elsewhere: { 'other.txt': 'x' } })
  const files = join(root, 'files')
  const { url } = await startTestServer(t, { data_dir: join(root, 'data'), connections: [{ label: 'files', type: 'local', path: files }] })
  const names = async (token: string) => {
    const res = await ls(url, token)
    t.equal(res.status, 200)
    return ((await res.json()) as { results: { name: string }[] }).results.map((e) => e.name)
  }
  const byType = await login(url, { type: 'local' })
  t.same(await names(byType.result.authorization!), ['planted.txt', 'sub'], 'by type: the configured folder')
  const byLabel = await login(url, { label: 'files' })
  t.same(await names(byLabel.result.authorization!), ['planted.txt', 'sub'], 'by label: the configured folder')
  t.equal(byType.result.backendID, byLabel.result.backendID, 'same connection, same backendID')
  const sneaky = await login(url, { type: 'local', path: join(root, 'elsewhere') })
  t.same(await names(sneaky.result.authorization!), ['planted.txt', 'sub'], 'a client-sent path is ignored')
  const sneaky2 = await login(url, { label: 'files', path: '/' })
  t.same(await names(sneaky2.result.authorization!), ['planted.txt', 'sub'], 'a client-sent path is ignored (by label)')
  const cat = await api(url, byLabel.result.authorization!)('GET', '/api/files/cat', { path: '/sub/deep.txt' })
  t.equal(await cat.text(), 'deep', 'serves the files of that folder')
  await expectError(t, await post(url, { label: 'nope' }), 400, 'INVALID_INPUT', 'unknown label')
})

t.test('a local connection whose folder is missing → 502 BACKEND_UNREACHABLE at login', async (t) => {
  const root = t.testdir({ data: {} })
  const { url } = await startTestServer(t, { data_dir: join(root, 'data'), connections: [{ label: 'gone', type: 'local', path: join(root, 'not-there') }] })
  await expectError(t, await post(url, { label: 'gone' }), 502, 'BACKEND_UNREACHABLE', 'missing folder')
})

t.test('GET /api/session answers the session without its token', async (t) => {
  const { url } = await startTestServer(t)
  const created = await login(url, { type: 'tmp', userID: 'alice' })
  const res = await getSession(url, created.result.authorization!)
  t.equal(res.status, 200)
  const json = (await res.json()) as SessionAnswer
  t.equal(json.status, 'ok')
  t.same(Object.keys(json.result).sort(), ['backendID', 'home', 'is_authenticated'], 'no authorization field')
  t.same(json.result, { home: '/', is_authenticated: true, backendID: created.result.backendID })
})

t.test('no credential → 401 with the error envelope', async (t) => {
  const { url } = await startTestServer(t)
  await expectError(t, await fetch(`${url}/api/session`), 401, 'NOT_AUTHENTICATED', 'GET /api/session')
  await expectError(t, await fetch(`${url}/api/session`, { method: 'DELETE' }), 401, 'NOT_AUTHENTICATED', 'DELETE /api/session')
  await expectError(t, await fetch(`${url}/api/files/ls?path=/`), 401, 'NOT_AUTHENTICATED', 'ls')
})

t.test('a tampered token → 401', async (t) => {
  const { url } = await startTestServer(t)
  const token = await tmpSession(url)
  const mid = Math.floor(token.length / 2)
  const flipped = token.slice(0, mid) + (token[mid] === 'A' ? 'B' : 'A') + token.slice(mid + 1)
  t.not(flipped, token)
  await expectError(t, await getSession(url, flipped), 401, 'NOT_AUTHENTICATED', 'one character flipped')
  await expectError(t, await ls(url, token.slice(0, -4)), 401, 'NOT_AUTHENTICATED', 'truncated')
  await expectError(t, await ls(url, 'not-a-token'), 401, 'NOT_AUTHENTICATED', 'garbage')
  t.equal((await getSession(url, token)).status, 200, 'the original still works')
})

t.test('DELETE /api/session revokes the token, and only that one', async (t) => {
  const { url } = await startTestServer(t)
  const token = await tmpSession(url)
  const other = await tmpSession(url)
  const del = await api(url, token)('DELETE', '/api/session')
  t.equal(del.status, 200)
  t.equal(((await del.json()) as { status: string }).status, 'ok')
  await expectError(t, await getSession(url, token), 401, 'NOT_AUTHENTICATED', 'GET /api/session after revoke')
  await expectError(t, await ls(url, token), 401, 'NOT_AUTHENTICATED', 'ls after revoke')
  t.equal((await ls(url, other)).status, 200, 'another token of the same user still works')
})

t.test('revocation survives a restart on the same data dir', async (t) => {
  const dataDir = t.testdir()
  const first = await startTestServer(t, { data_dir: dataDir })
  const token = await tmpSession(first.url)
  const kept = await tmpSession(first.url)
  t.equal((await api(first.url, token)('DELETE', '/api/session')).status, 200)
  await first.app.close(0)
  const second = await startTestServer(t, { data_dir: dataDir })
  await expectError(t, await ls(second.url, token), 401, 'NOT_AUTHENTICATED', 'revoked token after restart')
  t.equal((await ls(second.url, kept)).status, 200, 'an unrevoked token from before the restart still works (same secret)')
  const fresh = await tmpSession(second.url)
  t.equal((await ls(second.url, fresh)).status, 200, 'a fresh token works')
})

t.test('a token from a server with another data dir (another secret) → 401', async (t) => {
  const root = t.testdir({ one: {}, two: {} })
  const one = await startTestServer(t, { data_dir: join(root, 'one') })
  const two = await startTestServer(t, { data_dir: join(root, 'two') })
  const token = await tmpSession(one.url)
  t.equal((await ls(one.url, token)).status, 200)
  await expectError(t, await ls(two.url, token), 401, 'NOT_AUTHENTICATED', 'foreign token')
})

t.test('tokens expire after session.ttl_seconds', async (t) => {
  const { url } = await startTestServer(t, { session: { ttl_seconds: 1 } })
  const created = Date.now()
  const token = await tmpSession(url)
  t.equal((await ls(url, token)).status, 200, 'valid at first')
  let res = await ls(url, token)
  while (res.status === 200 && Date.now() - created < 5000) {
    await new Promise((r) => setTimeout(r, 100))
    res = await ls(url, token)
  }
  t.ok(Date.now() - created >= 900, 'not refused before its lifetime')
  await expectError(t, res, 401, 'NOT_AUTHENTICATED', 'expired')
})

t.test('the secret is kept at <data_dir>/state/secret, mode 0600', async (t) => {
  const { dataDir } = await startTestServer(t)
  const st = statSync(join(dataDir, 'state', 'secret'))
  t.ok(st.isFile())
  t.equal(st.mode & 0o777, 0o600)
  t.equal(st.size, 32, '256 bits')
})

t.test('two tmp users cannot see each other\u2019s files', async (t) => {
  const { url, dataDir } = await startTestServer(t)
  const alice = api(url, await tmpSession(url, 'alice'))
  const bob = api(url, await tmpSession(url, 'bob'))
  t.equal((await alice('POST', '/api/files/cat', { path: '/diary.txt' }, { body: 'alice only' })).status, 200)
  const list = (await (await bob('GET', '/api/files/ls', { path: '/' })).json()) as { results: unknown[] }
  t.same(list.results, [], 'bob sees an empty space')
  await expectError(t, await bob('GET', '/api/files/cat', { path: '/diary.txt' }), 404, 'NOT_FOUND', 'bob reads alice\u2019s file')
  await expectError(t, await bob('GET', '/api/files/cat', { path: '/../alice/diary.txt' }), 400, 'INVALID_INPUT', 'bob climbs to alice')
  // And alice's file is where a tmp space belongs, in her own folder.
  t.ok(statSync(join(dataDir, 'tmp', 'alice', 'diary.txt')).isFile())
  // A folder planted for bob does not leak into alice's listing.
  mkdirSync(join(dataDir, 'tmp', 'bob'), { recursive: true })
  writeFileSync(join(dataDir, 'tmp', 'bob', 'bob.txt'), 'b')
  const aliceList = (await (await alice('GET', '/api/files/ls', { path: '/' })).json()) as { results: { name: string }[] }
  t.same(
    aliceList.results.map((e) => e.name),
    ['diary.txt'],
  )
})
