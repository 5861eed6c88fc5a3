/**
 * @module test/front/apikey.test
 * API keys over real HTTP (docs/api.md, "API keys"): created by the admin (256
 * random bits, shown once, stored hashed), `?key=&share=` on file endpoints,
 * unknown/revoked 401, a browser Origin the key does not list 403.
 */
import { readFileSync } from 'node:fs'
import t, { type Test } from 'tap'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'
import { ADMIN_PASSWORD, adminToken, createKey, createShare, expectError, viaShare } from '../helpers/share.js'

async function setup(t: Test) {
  const srv = await startTestServer(t, { admin_password: ADMIN_PASSWORD })
  const token = await tmpSession(srv.url)
  await api(srv.url, token)('POST', '/api/files/cat', { path: '/docs/a.txt' }, { body: 'hello' })
  const share = await createShare(srv.url, token, { path: '/docs', can_read: true, can_upload: true })
  const admin = await adminToken(srv.url)
  return { ...srv, token, share, admin }
}

t.test('a key is shown once, 256 bits, stored only as a hash; list shows name, origins, times', async (t) => {
  const { url, admin, dataDir } = await setup(t)
  const k = await createKey(url, admin, 'my app', ['https://app.example.com'])
  t.match(k.key, /^fgk_[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url')
  const list = (await (await api(url, admin)('GET', '/admin/api/keys')).json()) as { results: Record<string, unknown>[] }
  t.equal(list.results.length, 1)
  t.same(Object.keys(list.results[0]!).sort(), ['created', 'id', 'last_used', 'name', 'origins'], 'no key, no hash in the listing')
  t.match(list.results[0], { id: k.id, name: 'my app', origins: ['https://app.example.com'], last_used: null })
  const file = (name: string) => { try { return readFileSync(`${dataDir}/state/${name}`).toString('latin1') } catch { return '' } }
  t.notOk((file('state.db') + file('state.db-wal')).includes(k.key), 'the key itself is not stored')
  await expectError(t, await api(url, admin)('POST', '/admin/api/keys', {}, { body: JSON.stringify({ name: 'x', origins: ['https://a.com/'] }) }), 400, 'INVALID_INPUT', 'an origin with a path')
  await expectError(t, await api(url, admin)('POST', '/admin/api/keys', {}, { body: JSON.stringify({ origins: [] }) }), 400, 'INVALID_INPUT', 'no name')
})

t.test('key + share: list, download, upload; last use recorded', async (t) => {
  const { url, admin, share } = await setup(t)
  const k = await createKey(url, admin, 'cli')
  const v = viaShare(url, share.id, k.key)
  t.equal((await v('GET', '/api/files/ls', { path: '/' })).status, 200, 'list')
  t.equal(await (await v('GET', '/api/files/cat', { path: '/a.txt' })).text(), 'hello', 'download')
  t.equal((await v('POST', '/api/files/cat', { path: '/up.txt' }, { body: 'up' })).status, 200, 'upload')
  const list = (await (await api(url, admin)('GET', '/admin/api/keys')).json()) as { results: { last_used: number | null }[] }
  t.ok(typeof list.results[0]!.last_used === 'number', 'last_used set')
})

t.test('unknown or revoked key → 401; key without share → 400', async (t) => {
  const { url, admin, share } = await setup(t)
  const k = await createKey(url, admin, 'cli')
  await expectError(t, await viaShare(url, share.id, `fgk_${'A'.repeat(43)}`)('GET', '/api/files/ls', { path: '/' }), 401, 'NOT_AUTHENTICATED', 'unknown key')
  await expectError(t, await viaShare(url, share.id, 'garbage')('GET', '/api/files/ls', { path: '/' }), 401, 'NOT_AUTHENTICATED', 'malformed key')
  await expectError(t, await fetch(`${url}/api/files/ls?path=/&key=${k.key}`), 400, 'INVALID_INPUT', 'key without share')
  t.equal((await api(url, admin)('DELETE', `/admin/api/keys/${k.id}`)).status, 200, 'revoke')
  await expectError(t, await viaShare(url, share.id, k.key)('GET', '/api/files/ls', { path: '/' }), 401, 'NOT_AUTHENTICATED', 'revoked key')
  await expectError(t, await api(url, admin)('DELETE', `/admin/api/keys/${k.id}`), 404, 'NOT_FOUND', 'revoking twice')
})

t.test('a browser Origin not listed by the key → 403; a listed one passes; no Origin passes', async (t) => {
  const { url, admin, share } = await setup(t)
  const k = await createKey(url, admin, 'web', ['https://app.example.com'])
  const v = viaShare(url, share.id, k.key)
  t.equal((await v('GET', '/api/files/ls', { path: '/' }, { headers: { origin: 'https://app.example.com' } })).status, 200, 'listed origin')
  await expectError(t, await v('GET', '/api/files/ls', { path: '/' }, { headers: { origin: 'https://evil.example.com' } }), 403, 'FORBIDDEN', 'other origin')
  t.equal((await v('GET', '/api/files/ls', { path: '/' })).status, 200, 'no Origin (not a browser)')
  const bare = await createKey(url, admin, 'server-only')
  await expectError(t, await viaShare(url, share.id, bare.key)('GET', '/api/files/ls', { path: '/' }, { headers: { origin: 'https://app.example.com' } }), 403, 'FORBIDDEN', 'a key with no origins, from a browser')
})

t.test('keys survive a restart', async (t) => {
  const dataDir = t.testdir()
  const first = await startTestServer(t, { data_dir: dataDir, admin_password: ADMIN_PASSWORD })
  const token = await tmpSession(first.url)
  const share = await createShare(first.url, token, { path: '/' })
  const k = await createKey(first.url, await adminToken(first.url), 'kept')
  await first.app.close(0)
  const second = await startTestServer(t, { data_dir: dataDir, admin_password: ADMIN_PASSWORD })
  t.equal((await viaShare(second.url, share.id, k.key)('GET', '/api/files/ls', { path: '/' })).status, 200)
})
