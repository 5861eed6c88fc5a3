/**
 * @module test/front/log-secrets.test
 * Secrets never reach the log (issue 10, item 5): a whole session against a server
 * whose log is captured at debug level: tmp and local logins, shares with and
 * without a password (used, listed, deleted by their owner and, refused, by another
 * user), an API key, the admin password and token (used, logged out), wrong
 * passwords, and ids sent to paths that match no route. Then every secret used is
 * looked for in the whole log: none may appear. The request lines show routes.
 */
import { join } from 'node:path'
import t from 'tap'
import { createLogger } from '../../front/log.js'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'
import { ADMIN_PASSWORD, adminToken, createKey, createShare, viaShare } from '../helpers/share.js'

t.test('a full session leaves none of its secrets in the log', async (t) => {
  const root = t.testdir({ data: {}, files: { 'a.txt': 'local file' } })
  const localPassword = 'local connection password'
  const lines: string[] = []
  const { url } = await startTestServer(
    t,
    { data_dir: join(root, 'data'), admin_password: ADMIN_PASSWORD, connections: [{ label: 'files', type: 'local', path: join(root, 'files'), password: localPassword }] },
    createLogger('debug', (line) => lines.push(line)),
  )
  const secrets: Record<string, string> = { 'admin password': ADMIN_PASSWORD, 'local password': localPassword }

  const alice = await tmpSession(url, 'alice')
  const bob = await tmpSession(url, 'bob')
  secrets['alice token'] = alice
  secrets['bob token'] = bob
  const local = await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'local', password: localPassword }) })
  secrets['local token'] = ((await local.json()) as { result: { authorization: string } }).result.authorization
  await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'local', password: 'a wrong local password' }) })
  secrets['wrong local password'] = 'a wrong local password'
  t.equal((await api(url, secrets['local token']!)('GET', '/api/files/cat', { path: '/a.txt' })).status, 200, 'the local session works')

  const a = api(url, alice)
  await a('POST', '/api/files/cat', { path: '/docs/a.txt' }, { body: 'hello' })
  const open = await createShare(url, alice, { path: '/docs' })
  const locked = await createShare(url, alice, { path: '/docs', password: 'share password 1' })
  secrets['open share id'] = open.id
  secrets['locked share id'] = locked.id
  secrets['share password'] = 'share password 1'
  t.equal((await viaShare(url, open.id)('GET', '/api/files/ls', { path: '/' })).status, 200)
  t.equal((await viaShare(url, locked.id)('GET', '/api/files/cat', { path: '/a.txt' }, { headers: { 'x-share-password': 'share password 1' } })).status, 200)
  const basic = Buffer.from('anyone:share password 1').toString('base64')
  secrets['basic credentials'] = basic
  t.equal((await viaShare(url, locked.id)('GET', '/api/files/ls', { path: '/' }, { headers: { authorization: `Basic ${basic}` } })).status, 200)
  await viaShare(url, locked.id)('GET', '/api/files/ls', { path: '/' }, { headers: { 'x-share-password': 'a wrong share guess' } })
  secrets['wrong share password'] = 'a wrong share guess'

  const admin = await adminToken(url)
  secrets['admin token'] = admin
  await fetch(`${url}/admin/api/session`, { method: 'POST', body: JSON.stringify({ password: 'a wrong admin guess' }) })
  secrets['wrong admin password'] = 'a wrong admin guess'
  const key = await createKey(url, admin, 'log test')
  secrets['API key'] = key.key
  t.equal((await viaShare(url, open.id, key.key)('GET', '/api/files/cat', { path: '/a.txt' })).status, 200, 'the API key works')
  const gatewayPassword = 'gateway user password'
  secrets['gateway user password'] = gatewayPassword
  await api(url, admin)('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'gw', password: gatewayPassword, connection: 'tmp' }) })

  // Ids in paths: another user's failed delete, the owner's delete, the admin's, and paths that match no route.
  t.equal((await api(url, bob)('DELETE', `/api/share/${locked.id}`)).status, 403, "bob cannot delete alice's share")
  t.equal((await a('GET', `/api/share/${locked.id}/extra`)).status, 400)
  t.equal((await fetch(`${url}/nowhere/${open.id}/${alice}`)).status, 404)
  t.equal((await fetch(`${url}/admin/api/keys/${key.key}/x`, { headers: { authorization: `Bearer ${admin}` } })).status, 404)
  t.equal((await a('DELETE', `/api/share/${open.id}`)).status, 200, 'the owner deletes a share')
  t.equal((await api(url, admin)('DELETE', `/admin/api/shares/${locked.id}`)).status, 200, 'the admin revokes a share')
  t.equal((await api(url, admin)('DELETE', `/admin/api/keys/${key.id}`)).status, 200, 'the admin revokes the key')
  t.equal((await api(url, admin)('DELETE', '/admin/api/session')).status, 200, 'the admin logs out')
  t.equal((await a('DELETE', '/api/session')).status, 200, 'alice logs out')

  // A request line is written when its answer is over, just after the client has it:
  // wait for the line of one last request, made after all the others.
  await fetch(`${url}/healthz`, { headers: { 'x-request-id': 'last-request' } })
  while (!lines.some((l) => l.includes('"last-request"'))) await new Promise((r) => setTimeout(r, 20))
  const log = lines.join('\n')
  t.ok(lines.length >= 25, `${lines.length} log lines captured`)
  for (const [what, secret] of Object.entries(secrets)) t.notOk(log.includes(secret), `the log holds no ${what}`)
  const paths = lines.map((l) => JSON.parse(l) as { msg: string; path?: string }).filter((l) => l.msg === 'request').map((l) => l.path)
  t.ok(paths.includes('/api/share/{id}'), 'share deletions are logged by their route')
  t.ok(paths.includes('/admin/api/shares/{id}') && paths.includes('/admin/api/keys/{id}'), 'admin deletions too')
  t.ok(paths.includes('unmatched'), 'a path that matches no route is not logged as sent')
  t.ok(paths.includes('/api/files/cat') && paths.includes('/api/session'), 'routes without ids as they are')
})
