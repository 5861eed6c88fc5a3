/**
 * @module test/front/admin-s3-keys.test
 * Gateway users' S3 keys in the admin API (docs/api.md, "Admin API"): made (the secret
 * told once, never listed, never in the log), listed, revoked, gone with their user;
 * admin credentials required; unknown users and keys answered 404. The log is the real
 * logger's output at debug level, read as written.
 */
import t from 'tap'
import { createLogger } from '../../front/log.js'
import { api, startTestServer } from '../helpers/filegate.js'
import { ADMIN_PASSWORD, adminToken, expectError } from '../helpers/share.js'

interface NewKey {
  access_key_id: string
  secret_access_key: string
  created: number
  last_used: null
}

t.test('S3 keys: made once with their secret, listed without it, revoked, removed with their user', async (t) => {
  const lines: string[] = []
  const { url } = await startTestServer(t, { admin_password: ADMIN_PASSWORD, log: { level: 'debug', requests: true } }, createLogger('debug', (line) => void lines.push(line)))
  const a = api(url, await adminToken(url))
  t.equal((await a('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'carol', connection: 'tmp', password: 'carol password' }) })).status, 200)

  const made = await a('POST', '/admin/api/users/carol/s3-keys')
  t.equal(made.status, 201)
  t.equal(made.headers.get('cache-control'), 'no-store', 'no cache keeps the secret')
  const k = ((await made.json()) as { result: NewKey }).result
  t.match(k.access_key_id, /^FG[A-Z0-9]{18}$/, 'a 20-character access key id')
  t.match(k.secret_access_key, /^[A-Za-z0-9]{40}$/, 'a 40-character secret')
  const k2 = ((await (await a('POST', '/admin/api/users/carol/s3-keys')).json()) as { result: NewKey }).result
  t.not(k2.access_key_id, k.access_key_id)
  t.not(k2.secret_access_key, k.secret_access_key)

  const listed = await (await a('GET', '/admin/api/users/carol/s3-keys')).text()
  t.same(
    (JSON.parse(listed) as { results: { access_key_id: string }[] }).results.map((x) => x.access_key_id),
    [k.access_key_id, k2.access_key_id],
    'listed, oldest first',
  )
  t.notOk(listed.includes(k.secret_access_key) || listed.includes(k2.secret_access_key), 'no secret in the list')
  t.match(JSON.parse(listed), { results: [{ created: Number, last_used: null }] })

  await expectError(t, await a('POST', '/admin/api/users/nobody/s3-keys'), 404, 'NOT_FOUND', 'a key for an unknown user')
  await expectError(t, await a('GET', '/admin/api/users/nobody/s3-keys'), 404, 'NOT_FOUND', 'the keys of an unknown user')
  await expectError(t, await a('DELETE', '/admin/api/users/carol/s3-keys/FGAAAAAAAAAAAAAAAAAA'), 404, 'NOT_FOUND', 'an unknown key')
  await expectError(t, await a('PUT', '/admin/api/users/carol/s3-keys'), 400, 'INVALID_INPUT', 'another method')
  await expectError(t, await fetch(`${url}/admin/api/users/carol/s3-keys`, { method: 'POST' }), 401, 'NOT_AUTHENTICATED', 'no admin token')
  const user = api(url, (await (await fetch(`${url}/api/session`, { method: 'POST', body: '{"type":"tmp","userID":"x"}' })).json() as { result: { authorization: string } }).result.authorization)
  await expectError(t, await user('GET', '/admin/api/users/carol/s3-keys'), 401, 'NOT_AUTHENTICATED', "a user's session token")

  t.equal((await a('DELETE', `/admin/api/users/carol/s3-keys/${k.access_key_id}`)).status, 200, 'revoked')
  await expectError(t, await a('DELETE', `/admin/api/users/carol/s3-keys/${k.access_key_id}`), 404, 'NOT_FOUND', 'revoked twice')
  t.same(((await (await a('GET', '/admin/api/users/carol/s3-keys')).json()) as { results: { access_key_id: string }[] }).results.map((x) => x.access_key_id), [k2.access_key_id])

  // Removing the user removes its keys: made again, it has none.
  t.equal((await a('DELETE', '/admin/api/users/carol')).status, 200)
  t.equal((await a('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'carol', connection: 'tmp', password: 'carol password' }) })).status, 200)
  t.same(((await (await a('GET', '/admin/api/users/carol/s3-keys')).json()) as { results: unknown[] }).results, [], 'a user made again has no key of the old one')

  t.ok(lines.some((l) => l.includes('s3-keys')), 'the requests were logged')
  t.notOk(lines.some((l) => l.includes(k.secret_access_key) || l.includes(k2.secret_access_key)), 'no secret in the log')
})
