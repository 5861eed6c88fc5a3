/**
 * @module test/front/cors.test
 * CORS (docs/api.md, "CORS"): off by default; configured origins and each API
 * key's origins get Access-Control-Allow-Origin + Vary; preflight 204 with the
 * allowed methods and headers; other origins get no CORS headers.
 */
import t from 'tap'
import { startTestServer, tmpSession } from '../helpers/filegate.js'
import { ADMIN_PASSWORD, adminToken, createKey } from '../helpers/share.js'

const APP = 'https://app.example.com'
const preflight = (url: string, origin: string) =>
  fetch(`${url}/api/files/ls?path=/`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' } })

t.test('off by default: no CORS headers, even for a preflight', async (t) => {
  const { url } = await startTestServer(t)
  const res = await preflight(url, APP)
  t.equal(res.status, 204)
  t.equal(res.headers.get('access-control-allow-origin'), null)
  const get = await fetch(`${url}/healthz`, { headers: { origin: APP } })
  t.equal(get.headers.get('access-control-allow-origin'), null)
})

t.test('configured origins: preflight and replies carry CORS headers; others none', async (t) => {
  const { url } = await startTestServer(t, { cors: { origins: [APP] } })
  const res = await preflight(url, APP)
  t.equal(res.status, 204)
  t.equal(res.headers.get('access-control-allow-origin'), APP)
  t.match(res.headers.get('vary') ?? '', /Origin/)
  t.match(res.headers.get('access-control-allow-methods') ?? '', /GET.*POST.*DELETE/)
  const allowHeaders = (res.headers.get('access-control-allow-headers') ?? '').toLowerCase()
  for (const h of ['authorization', 'content-type', 'x-share-password', 'range']) t.ok(allowHeaders.includes(h), `allows ${h}`)
  const token = await tmpSession(url)
  const get = await fetch(`${url}/api/files/ls?path=/`, { headers: { origin: APP, authorization: `Bearer ${token}` } })
  t.equal(get.status, 200)
  t.equal(get.headers.get('access-control-allow-origin'), APP)
  t.match(get.headers.get('vary') ?? '', /Origin/)
  t.match(get.headers.get('access-control-expose-headers') ?? '', /X-Request-Id/)
  const err = await fetch(`${url}/api/files/ls?path=/`, { headers: { origin: APP } })
  t.equal(err.status, 401)
  t.equal(err.headers.get('access-control-allow-origin'), APP, 'errors carry CORS headers too (the page can read them)')
  const other = await preflight(url, 'https://evil.example.com')
  t.equal(other.headers.get('access-control-allow-origin'), null, 'another origin: none')
  const otherGet = await fetch(`${url}/healthz`, { headers: { origin: 'https://evil.example.com' } })
  t.equal(otherGet.headers.get('access-control-allow-origin'), null)
  t.equal(otherGet.headers.get('access-control-allow-methods'), null)
})

t.test("an API key's origins are allowed; revoking the key withdraws them", async (t) => {
  const { url } = await startTestServer(t, { admin_password: ADMIN_PASSWORD })
  const admin = await adminToken(url)
  t.equal((await preflight(url, APP)).headers.get('access-control-allow-origin'), null, 'before the key')
  const k = await createKey(url, admin, 'web', [APP])
  t.equal((await preflight(url, APP)).headers.get('access-control-allow-origin'), APP, 'with the key')
  await fetch(`${url}/admin/api/keys/${k.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${admin}` } })
  t.equal((await preflight(url, APP)).headers.get('access-control-allow-origin'), null, 'after revocation')
})

t.test('cors config is validated precisely', async (t) => {
  const { validateConfig } = await import('../../core/config.js')
  t.throws(() => validateConfig({ cors: { origins: ['https://a.com/'] } }), /cors.origins\[0\]/)
  t.throws(() => validateConfig({ cors: { origins: 'https://a.com' } }), /cors.origins must be a list/)
  t.throws(() => validateConfig({ cors: { origin: [] } }), /unknown key "origin"/)
  t.same(validateConfig({ cors: { origins: ['http://localhost:3000'] } }).cors.origins, ['http://localhost:3000'])
  const { loadConfig } = await import('../../front/config-load.js')
  t.same(loadConfig([], { FILEGATE_CORS_ORIGINS: '["https://x.org"]' }).cors.origins, ['https://x.org'], 'FILEGATE_CORS_ORIGINS')
  t.equal(loadConfig([], { FILEGATE_ADMIN_PASSWORD: 'longenough' }).admin_password, 'longenough', 'FILEGATE_ADMIN_PASSWORD')
  t.throws(() => validateConfig({ admin_password: 'short' }), /admin_password/)
})
