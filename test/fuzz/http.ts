/**
 * The HTTP API's door: every file endpoint with fuzzed paths (both encodings), query
 * parameters, headers and bodies; credentials (tokens, share ids, API keys) garbled;
 * JSON bodies of sessions, shares and the admin API; tus uploads; OAuth endpoints;
 * unknown routes and methods. After each case: no 5xx but 503, the answer as
 * docs/openapi.json says, no leak, nothing outside changed.
 */
import fc from 'fast-check'
import { type Encoding, body, encoding, headerValue, inUrl, jsonObject, path, plainPath, wrongCredential } from './arbitraries.js'
import { type Door, checkCase } from './door.js'
import { expect, httpProblem, leak } from './invariants.js'
import { type Answer, raw } from './raw-http.js'
import { PATCHED_USER, type World } from './world.js'

const FILE_OPS = [
  ['GET', 'ls'], ['GET', 'cat'], ['HEAD', 'cat'], ['POST', 'cat'], ['GET', 'zip'], ['POST', 'mv'], ['POST', 'rm'], ['POST', 'mkdir'], ['POST', 'touch'],
] as const

/** The answer obeys the API's rules and leaks nothing. */
function check(w: World, method: string, target: string, a: Answer | null): void {
  if (a === null) return // the client could not send it
  const pathname = target.split('?')[0]!
  const json = (a.headers.get('content-type') ?? '').startsWith('application/json')
  const problem = httpProblem(method, pathname, a.status, a.headers, json ? a.body.toString('utf8') : null)
  expect(problem === null, problem!)
  const headers: string[] = []
  a.headers.forEach((v, k) => headers.push(`${k}: ${v}`))
  const leaked = leak(w, a.body) ?? leak(w, headers.join('\n'))
  expect(leaked === null, `${method} ${target.slice(0, 300)} → ${a.status}: ${leaked}`)
}

function query(pairs: readonly (readonly [string, string])[], how: Encoding): string {
  return pairs.map(([k, v]) => `${inUrl(k, 'component')}=${inUrl(v, how)}`).join('&')
}

const queryExtra = fc.array(
  fc.tuple(fc.constantFrom('overwrite', 'name', 'compression', 'path', 'from', 'to', 'share', 'key', 'plugin', 'x'), fc.oneof(fc.constantFrom('true', 'false', 'store', 'deflate', '1', '', 'yes'), path)),
  { maxLength: 2 },
)

const headerNames = fc.constantFrom('range', 'if-none-match', 'if-modified-since', 'if-range', 'content-type', 'x-request-id', 'origin', 'x-share-password', 'accept-encoding', 'expect', 'x-forwarded-for', 'cookie', 'content-encoding')

export async function httpDoor(w: World): Promise<Door> {
  const auth = { authorization: `Bearer ${w.token}` }
  const admin = { authorization: `Bearer ${w.adminToken}` }

  const files = fc.asyncProperty(
    fc.constantFrom(...FILE_OPS), path, path, encoding, queryExtra, fc.dictionary(headerNames, headerValue, { maxKeys: 2 }), body,
    async ([method, op], p, to, how, extra, headers, payload) => {
      await checkCase(w, async () => {
        const pairs: [string, string][] = op === 'mv' ? [['from', p], ['to', to]] : [['path', p]]
        if (op === 'zip') pairs.push(['compression', 'store']) // stored, so a canary would show in the bytes
        const target = `/api/files/${op}?${query([...pairs, ...extra], how)}`
        check(w, method, target, await raw(w.url, method, target, { ...headers, ...auth }, method === 'POST' ? payload : undefined))
      })
    },
  )

  /** A file endpoint with each credential garbled: always refused, in the envelope. */
  const credentials = fc.asyncProperty(
    fc.constantFrom(...FILE_OPS, ['GET', 'share'] as const, ['GET', 'session'] as const),
    fc.constantFrom('bearer', 'share', 'key', 'basic', 'scheme'),
    wrongCredential(w.token),
    plainPath,
    async ([method, op], kind, cred, p) => {
      await checkCase(w, async () => {
        const base = op === 'share' || op === 'session' ? `/api/${op}` : `/api/files/${op}`
        const q: [string, string][] = [[op === 'mv' ? 'from' : 'path', p], ...(op === 'mv' ? [['to', `${p}2`] as [string, string]] : [])]
        if (kind === 'share') q.push(['share', cred])
        if (kind === 'key') q.push(['key', cred], ['share', cred.slice(0, 22)])
        const headers: Record<string, string> = {}
        if (kind === 'bearer') headers.authorization = `Bearer ${cred}`
        if (kind === 'basic') headers.authorization = `Basic ${Buffer.from(`x:${cred}`).toString('base64')}`
        if (kind === 'scheme') headers.authorization = cred
        const target = `${base}?${query(q, 'component')}`
        const a = await raw(w.url, method, target, headers, method === 'POST' ? new Uint8Array([1]) : undefined)
        check(w, method, target, a)
        if (a !== null) expect([400, 401, 403, 404, 410, 429].includes(a.status), `${method} ${target} with a wrong ${kind} credential → ${a.status}`)
      })
    },
  )

  /** JSON bodies of the endpoints that take one, shaped like theirs or not at all. */
  type Endpoint = readonly [string, string, 'none' | 'user' | 'admin', readonly string[]]
  const jsonBodies = fc.asyncProperty(
    fc
      .constantFrom<Endpoint>(
        ['POST', '/api/session', 'none', ['type', 'userID', 'label', 'path', 'hostname', 'username']],
        ['POST', '/api/share', 'user', ['path', 'can_read', 'can_upload', 'can_write', 'expire']],
        ['POST', '/admin/api/keys', 'admin', ['name', 'origins']],
        ['POST', '/admin/api/users', 'admin', ['name', 'connection', 'root', 'read_only', 'authorized_keys', 'password']],
        ['PATCH', `/admin/api/users/${PATCHED_USER}`, 'admin', ['root', 'read_only', 'permissions', 'connection']],
        ['POST', '/admin/api/users/fuzzer/keys', 'admin', ['key', 'public_key']],
        ['POST', '/register', 'none', ['redirect_uris', 'client_name', 'grant_types', 'token_endpoint_auth_method', 'response_types', 'scope']],
      )
      .chain((e) => fc.tuple(fc.constant(e), fc.oneof(jsonObject(e[3]), fc.jsonValue({ maxDepth: 2 })))),
    fc.boolean(),
    async ([[method, target, who], value], asJson) => {
      await checkCase(w, async () => {
        // The session door with a password-less login only: wrong passwords wait 300 ms (the credentials property covers refusals).
        if (target === '/api/session' && value && typeof value === 'object' && 'password' in value) return
        const text = asJson || (typeof value === 'object' && value !== null) ? (JSON.stringify(value) ?? 'null') : String(value)
        const headers = who === 'user' ? auth : who === 'admin' ? admin : {}
        check(w, method, target, await raw(w.url, method, target, { ...headers, 'content-type': 'application/json' }, new TextEncoder().encode(text)))
      })
    },
  )

  /** tus: creation with fuzzed targets, metadata and lengths; PATCH/HEAD/DELETE of made-up or real uploads with fuzzed offsets. */
  const tus = fc.asyncProperty(
    path, encoding, fc.oneof(fc.constantFrom('0', '5', '-1', '', 'x', '1e3', '99999999999999999999'), fc.nat({ max: 64 }).map(String)),
    fc.oneof(fc.constant(undefined), path.map((p) => `path ${Buffer.from(p).toString('base64')},filename ${Buffer.from(p).toString('base64')}`), headerValue),
    fc.constantFrom('PATCH', 'HEAD', 'DELETE', 'POST'), fc.oneof(fc.nat({ max: 64 }).map(String), headerValue), body, fc.boolean(),
    async (p, how, length, metadata, next, offset, payload, realId) => {
      await checkCase(w, async () => {
        const headers: Record<string, string> = { ...auth, 'tus-resumable': '1.0.0', 'upload-length': length }
        if (metadata !== undefined) headers['upload-metadata'] = metadata
        const made = `/api/files/tus?${query([['path', p]], how)}`
        const a = await raw(w.url, 'POST', made, headers)
        check(w, 'POST', made, a)
        const location = a?.headers.get('location')
        const id = realId && location ? location.split('?')[0]! : `/api/files/tus/${inUrl(offset, 'component')}`
        const target = id
        const b = await raw(w.url, next, target, { ...auth, 'tus-resumable': '1.0.0', 'upload-offset': offset, 'content-type': 'application/offset+octet-stream' }, next === 'PATCH' || next === 'POST' ? payload : undefined)
        check(w, next, target, b)
        if (realId && location) await raw(w.url, 'DELETE', id, { ...auth, 'tus-resumable': '1.0.0' })
      })
    },
  )

  /** Any method on any route (known ones with `..` and encodings in the URL path too), with or without a credential. */
  const routes = fc.asyncProperty(
    fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'PROPFIND', 'TRACE'),
    fc.oneof(
      fc.constantFrom('/api/files/ls', '/api/files/cat', '/api/share', '/api/share/x', '/admin/api/users', '/admin/api/keys', '/admin/api/shares', '/admin/api/status', '/admin/console.js', '/healthz', '/metrics', '/api/openapi.json', '/plugins/plg_image_ascii/render', '/.well-known/oauth-authorization-server', '/authorize', '/token', '/revoke', '/admin/api/users/fuzzer/s3-keys'),
      fc.array(fc.oneof(fc.constantFrom('api', 'files', 'admin', 'share', 'tus', 'plugins', 'mcp', '..', '%2e%2e', '.', '', 'x'), fc.stringMatching(/^[a-z%0-9.]{1,6}$/)), { maxLength: 5 }).map((s) => `/${s.join('/')}`),
    ),
    fc.constantFrom('', `?path=${encodeURIComponent('/../rootside/secret.txt')}`, '?path=/out-abs/secret.txt', '?path=%2e%2e%2frootside', '?a=1&a=2', '?%zz', '?path'),
    fc.constantFrom('none', 'user', 'admin', 'garbled'),
    body,
    async (method, route, q, who, payload) => {
      await checkCase(w, async () => {
        const headers = who === 'user' ? auth : who === 'admin' ? admin : who === 'garbled' ? { authorization: 'Bearer \u00ff' } : {}
        // /mcp, /sse and /messages speak MCP (errors as JSON-RPC or OAuth's): test/fuzz/mcp.ts.
        if (/^\/(mcp|sse|messages)(\/|$)/.test(route)) return
        const target = route + q
        check(w, method, target, await raw(w.url, method, target, headers, method === 'GET' || method === 'HEAD' ? undefined : payload))
      })
    },
  )

  /** OAuth: the authorization page and the token and revocation endpoints with fuzzed parameters. */
  const oauth = fc.asyncProperty(
    fc.constantFrom(['GET', '/authorize'], ['POST', '/authorize'], ['POST', '/token'], ['POST', '/revoke']) as fc.Arbitrary<[string, string]>,
    fc.array(
      fc.tuple(
        fc.constantFrom('response_type', 'client_id', 'redirect_uri', 'code_challenge', 'code_challenge_method', 'state', 'scope', 'resource', 'grant_type', 'code', 'code_verifier', 'refresh_token', 'token', 'username', 'password', 'connection', 'action', 'csrf'),
        fc.oneof(headerValue, path, fc.constantFrom('code', 'S256', 'plain', 'authorization_code', 'refresh_token', 'http://127.0.0.1:1/cb', 'javascript:alert(1)', 'allow', 'deny')),
      ),
      { maxLength: 6 },
    ),
    encoding,
    async ([method, route], params, how) => {
      await checkCase(w, async () => {
        const form = query(params, how)
        const target = method === 'GET' ? `${route}?${form}` : route
        const a = await raw(w.url, method, target, { 'content-type': 'application/x-www-form-urlencoded' }, method === 'POST' ? new TextEncoder().encode(form) : undefined)
        check(w, method, target, a)
      })
    },
  )

  return {
    properties: [
      { name: 'files', property: files, weight: 6 },
      { name: 'credentials', property: credentials, weight: 2 },
      { name: 'json bodies', property: jsonBodies, weight: 2 },
      { name: 'tus', property: tus, weight: 2 },
      { name: 'routes', property: routes, weight: 1 },
      { name: 'oauth', property: oauth, weight: 1 },
    ],
  }
}
