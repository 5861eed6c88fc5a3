/**
 * @module test/front/openapi.test
 * The OpenAPI document (docs/openapi.json): valid OpenAPI 3.1 (checked by
 * @seriousme/openapi-schema-validator against the specification's own schema),
 * served at GET /api/openapi.json without a credential, and complete: every route
 * the server registers is in it. The answers of every HTTP test are checked against
 * it by test/helpers/openapi.ts; here, that check is shown to catch answers the
 * document does not describe.
 */
import { readFileSync } from 'node:fs'
import { Validator } from '@seriousme/openapi-schema-validator'
import t from 'tap'
import { validateConfig } from '../../core/config.js'
import { Metrics } from '../../front/metrics.js'
import { type OAuthDeps, createOAuth } from '../../front/oauth/index.js'
import { type ServerDeps, registeredRoutes } from '../../front/server.js'
import { startTestServer, tmpSession } from '../helpers/filegate.js'
import { DOCUMENT_FILE, document, mismatch, templateOf } from '../helpers/openapi.js'

t.test('the document is valid OpenAPI 3.1', async (t) => {
  const result = await new Validator().validate(JSON.parse(readFileSync(DOCUMENT_FILE, 'utf8')) as Parameters<Validator['validate']>[0])
  t.same(result, { valid: true })
  t.match(document, { openapi: /^3\.1\./ })
})

t.test('it is served at /api/openapi.json, to anyone', async (t) => {
  const { url } = await startTestServer(t)
  const res = await fetch(`${url}/api/openapi.json`)
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^application\/json/)
  t.same(await res.json(), document)
})

t.test('every route the server registers is documented', async (t) => {
  // Only the route table is built: none of these services is called.
  const deps = { metrics: { meter: new Metrics({ pool: () => ({ threads: 0, running: 0, queued: 0, completed: 0, transfers: 0, bufferedBytes: 0 }), sessionsIssued: () => 0, inFlight: () => 0 }), access: validateConfig({}).metrics }, tus: {}, oauth: createOAuth({ config: validateConfig({}), secret: Buffer.alloc(32) } as OAuthDeps) } as unknown as ServerDeps
  const routes = registeredRoutes(deps)
  t.ok(routes.includes('GET /metrics') && routes.includes('GET /api/files/ls') && routes.includes('PATCH /api/files/tus/{id}') && routes.includes('POST /token'), 'the table is read')
  for (const route of routes) {
    const [method, path] = route.split(' ') as [string, string]
    const template = templateOf(path)
    t.ok(template !== null && document.paths[template]![method.toLowerCase()], `${route} is in docs/openapi.json`)
  }
})

t.test('answers the document does not describe are caught', async (t) => {
  const json = new Headers({ 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'r1' })
  const ok = '{"status":"ok","results":[],"permissions":{"can_read":true,"can_create_file":true,"can_create_directory":true,"can_rename":true,"can_move":true,"can_upload":true,"can_delete":true,"can_share":true}}'
  t.equal(mismatch('GET', '/api/files/ls', 200, json, ok), null, 'a listing as documented')
  t.match(mismatch('GET', '/api/files/ls', 200, json, ok.replace('"results":[]', '"results":[{"name":"a","type":"link","size":0,"time":0}]')), /does not match the document/, 'an entry of an unknown type')
  t.match(mismatch('GET', '/api/files/ls', 200, new Headers({ 'content-type': 'application/json' }), ok), /header X-Request-Id is required/)
  t.match(mismatch('GET', '/api/files/ls', 302, json, ok), /status 302 is not documented/)
  t.match(mismatch('GET', '/api/nothing-here', 200, json, '{}'), /not in docs\/openapi.json/)
  t.match(mismatch('GET', '/api/files/ls', 404, json, '{"status":"error","code":"GONE_MISSING","message":"x"}'), /does not match/, 'an error code outside the list')
  t.match(mismatch('GET', '/api/files/zip', 200, new Headers({ 'content-type': 'text/plain', 'x-request-id': 'r', 'content-disposition': 'x' }), null), /Content-Type text\/plain is not one of application\/zip/)
})

t.test('real answers pass the check', async (t) => {
  // The same check runs on every fetch of every HTTP test (test/helpers/filegate.ts); a few here, stated.
  const { url } = await startTestServer(t)
  const token = await tmpSession(url)
  const auth = { authorization: `Bearer ${token}` }
  for (const [method, path, status] of [
    ['GET', '/api/session', 200],
    ['GET', '/api/files/ls?path=/', 200],
    ['GET', '/api/files/ls?path=/missing/', 404],
    ['GET', '/api/files/zip?path=/', 200],
    ['PUT', '/api/files/ls?path=/', 400],
    ['GET', '/healthz', 200],
    ['GET', '/metrics', 200],
    ['GET', '/nothing', 404],
  ] as const) {
    const res = await fetch(`${url}${path}`, { method, headers: auth })
    t.equal(res.status, status, `${method} ${path}`)
    await res.arrayBuffer()
  }
})
