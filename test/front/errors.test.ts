/**
 * @module test/front/errors.test
 * The error envelope, X-Request-Id, routing errors, credentials, and hostile paths
 * over real HTTP (docs/api.md, "Conventions and errors"): nothing outside the user's space is ever
 * created or read.
 */
import { mkdirSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join, relative } from 'node:path'
import t, { type Test } from 'tap'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'

async function expectError(t: Test, res: Response, status: number, code: string, what: string): Promise<string> {
  t.equal(res.status, status, `${what}: HTTP ${status}`)
  t.match(res.headers.get('content-type') ?? '', /^application\/json/, `${what}: JSON`)
  const text = await res.text()
  let body: Record<string, unknown> = {}
  try {
    body = JSON.parse(text) as Record<string, unknown>
  } catch {
    t.fail(`${what}: the body is JSON (${text.slice(0, 200)})`)
  }
  t.same(Object.keys(body).sort(), ['code', 'message', 'status'], `${what}: the envelope, nothing else`)
  t.equal(body.status, 'error', `${what}: status error`)
  t.equal(body.code, code, `${what}: code ${code}`)
  t.ok(typeof body.message === 'string' && body.message.length > 0, `${what}: a message`)
  t.notMatch(text, /\bat .*\.(ts|js):\d+/, `${what}: no stack trace`)
  return text
}

/** Every entry under `dir` (files and directories), relative, sorted. */
function tree(dir: string, skip: (rel: string) => boolean = () => false): string[] {
  const out: string[] = []
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const abs = join(d, e.name)
      const rel = relative(dir, abs)
      if (skip(rel)) continue
      out.push(e.isDirectory() ? `${rel}/` : rel)
      if (e.isDirectory()) walk(abs)
    }
  }
  walk(dir)
  return out.sort()
}

/** A raw HTTP exchange: what the server sent until it closed or went quiet. */
function raw(url: string, text: string, quietMs = 500): Promise<string> {
  const { port } = new URL(url)
  return new Promise((resolve) => {
    const sock = connect(Number(port), '127.0.0.1')
    const parts: Buffer[] = []
    let timer: NodeJS.Timeout = setTimeout(() => finish(), 3000)
    const finish = () => {
      clearTimeout(timer)
      sock.destroy()
      resolve(Buffer.concat(parts).toString('latin1'))
    }
    sock.on('data', (d) => {
      parts.push(d)
      clearTimeout(timer)
      timer = setTimeout(finish, quietMs)
    })
    sock.on('end', finish)
    sock.on('error', finish)
    sock.write(text)
  })
}

t.test('X-Request-Id on every response, echoed when sent', async (t) => {
  const { url } = await startTestServer(t)
  const token = await tmpSession(url)
  const call = api(url, token)
  await call('POST', '/api/files/cat', { path: '/f.txt' }, { body: 'x' })
  const cases: [string, () => Promise<Response>][] = [
    ['success', () => call('GET', '/api/files/ls', { path: '/' })],
    ['error', () => call('GET', '/api/files/ls', { path: '/missing' })],
    ['unknown route', () => fetch(`${url}/nope`)],
    ['no credential', () => fetch(`${url}/api/files/ls?path=/`)],
    ['HEAD', () => call('HEAD', '/api/files/cat', { path: '/f.txt' })],
    ['download', () => call('GET', '/api/files/cat', { path: '/f.txt' })],
    ['session', () => fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'tmp', userID: 'a' }) })],
  ]
  const seen = new Set<string>()
  for (const [what, send] of cases) {
    const res = await send()
    await res.arrayBuffer()
    const id = res.headers.get('x-request-id')
    t.ok(id && id.length >= 8, `${what}: X-Request-Id generated (${id})`)
    seen.add(id ?? '')
  }
  t.equal(seen.size, cases.length, 'a different id for each request')
  const etag = (await call('GET', '/api/files/cat', { path: '/f.txt' })).headers.get('etag')!
  const notModified = await call('GET', '/api/files/cat', { path: '/f.txt' }, { headers: { 'if-none-match': etag } })
  t.equal(notModified.status, 304)
  t.ok(notModified.headers.get('x-request-id'), '304: X-Request-Id')
  for (const [what, send] of [
    ['success', (h: HeadersInit) => call('GET', '/api/files/ls', { path: '/' }, { headers: h })],
    ['error', (h: HeadersInit) => call('GET', '/api/files/ls', { path: '/missing' }, { headers: h })],
    ['unknown route', (h: HeadersInit) => fetch(`${url}/nope`, { headers: h })],
    ['304', (h: HeadersInit) => call('GET', '/api/files/cat', { path: '/f.txt' }, { headers: { ...h, 'if-none-match': etag } })],
    ['HEAD', (h: HeadersInit) => call('HEAD', '/api/files/cat', { path: '/f.txt' }, { headers: h })],
  ] as const) {
    const res = await send({ 'x-request-id': `client-id-${what.replace(/\W/g, '')}-42` })
    await res.arrayBuffer()
    t.equal(res.headers.get('x-request-id'), `client-id-${what.replace(/\W/g, '')}-42`, `${what}: the client's id echoed`)
  }
})

t.test('unknown endpoint → 404 NOT_FOUND JSON; wrong method → 400', async (t) => {
  const { url } = await startTestServer(t)
  const token = await tmpSession(url)
  await expectError(t, await fetch(`${url}/api/files/nope?path=/`), 404, 'NOT_FOUND', 'unknown file endpoint')
  await expectError(t, await fetch(`${url}/no/such/thing`), 404, 'NOT_FOUND', 'unknown path')
  await expectError(t, await fetch(`${url}/s`), 404, 'NOT_FOUND', 'a share page with no id')
  await expectError(t, await fetch(`${url}/api/files/ls/extra?path=/`), 404, 'NOT_FOUND', 'a known endpoint with a suffix')
  const call = api(url, token)
  await expectError(t, await call('GET', '/api/files/mv', { from: '/a', to: '/b' }), 400, 'INVALID_INPUT', 'GET mv')
  await expectError(t, await call('POST', '/api/files/ls', { path: '/' }), 400, 'INVALID_INPUT', 'POST ls')
  await expectError(t, await call('DELETE', '/api/files/rm', { path: '/x' }), 400, 'INVALID_INPUT', 'DELETE rm')
  await expectError(t, await call('PUT', '/api/files/cat', { path: '/x' }, { body: 'x' }), 400, 'INVALID_INPUT', 'PUT cat')
})

t.test('missing path parameters → 400', async (t) => {
  const { url } = await startTestServer(t)
  const call = api(url, await tmpSession(url))
  for (const [method, endpoint] of [
    ['GET', '/api/files/ls'],
    ['GET', '/api/files/cat'],
    ['POST', '/api/files/cat'],
    ['GET', '/api/files/zip'],
    ['POST', '/api/files/rm'],
    ['POST', '/api/files/mkdir'],
    ['POST', '/api/files/touch'],
    ['POST', '/api/files/mv'],
  ] as const) {
    await expectError(t, await call(method, endpoint), 400, 'INVALID_INPUT', `${method} ${endpoint} without path`)
  }
  await expectError(t, await call('GET', '/api/files/ls', { path: '' }), 400, 'INVALID_INPUT', 'an empty path')
})

t.test('credentials: none, Basic, garbage, unknown key → 401; unknown share → 404', async (t) => {
  const { url } = await startTestServer(t)
  const token = await tmpSession(url)
  const ls = (headers: Record<string, string>, query = '') => fetch(`${url}/api/files/ls?path=/${query}`, { headers })
  await expectError(t, await ls({}), 401, 'NOT_AUTHENTICATED', 'no credential')
  await expectError(t, await ls({ authorization: 'Basic x' }), 401, 'NOT_AUTHENTICATED', 'Basic x')
  await expectError(t, await ls({ authorization: `Basic ${Buffer.from('alice:pw').toString('base64')}` }), 401, 'NOT_AUTHENTICATED', 'Basic user:pw')
  await expectError(t, await ls({ authorization: 'Bearer' }), 401, 'NOT_AUTHENTICATED', 'Bearer without token')
  await expectError(t, await ls({ authorization: token }), 401, 'NOT_AUTHENTICATED', 'token without Bearer')
  await expectError(t, await ls({}, '&share=abc'), 404, 'NOT_FOUND', '?share= unknown (test/front/share.test.ts has the rest)')
  await expectError(t, await ls({}, '&key=k&share=abc'), 401, 'NOT_AUTHENTICATED', '?key= unknown (test/front/apikey.test.ts has the rest)')
  t.equal((await ls({ authorization: `bearer ${token}` })).status, 200, 'the scheme is case-insensitive')
})

t.test('hostile paths → 400 INVALID_INPUT; nothing outside the user space is created or read', async (t) => {
  const { url, dataDir } = await startTestServer(t)
  const token = await tmpSession(url, 'alice')
  const home = join(dataDir, 'tmp', 'alice')
  mkdirSync(home, { recursive: true })
  writeFileSync(join(home, 'mine.txt'), 'mine')
  // Secrets next to alice's space: another user's file, a file in the data dir.
  mkdirSync(join(dataDir, 'tmp', 'victim'), { recursive: true })
  writeFileSync(join(dataDir, 'tmp', 'victim', 'secret.txt'), 'TOP-SECRET-VICTIM')
  writeFileSync(join(dataDir, 'tmp', 'secret.txt'), 'TOP-SECRET-TMP')
  writeFileSync(join(dataDir, 'secret.txt'), 'TOP-SECRET-DATA')
  const outside = (rel: string) => rel === 'tmp/alice' || rel.startsWith('tmp/alice/') || rel.startsWith('state/')
  const before = tree(dataDir, outside)

  // Raw query strings: sent byte for byte, so percent-encodings reach the server as written.
  const hostile: [string, string][] = [
    ['../', '../'],
    ['../x', '../x'],
    ['/../../etc/passwd', '/../../etc/passwd'],
    ['/a/../../b', '/a/../../b'],
    ['/.. (the parent of the root)', '/..'],
    ['%2e%2e/ (encoded)', '%2e%2e/secret.txt'],
    ['/%2e%2e/%2e%2e/ (encoded)', '/%2e%2e/%2e%2e/secret.txt'],
    ['/%2E%2E/victim/secret.txt (encoded, upper case)', '/%2E%2E/victim/secret.txt'],
    ['%2F..%2Fsecret.txt (encoded slashes)', '%2F..%2Fsecret.txt'],
    ['NUL', '/mine.txt%00.jpg'],
    ['newline', '/mine%0a.txt'],
    ['carriage return', '/mine%0d.txt'],
    ['backslash', '/..%5C..%5Csecret.txt'],
    ['a lone backslash name', '%5Cmine.txt'],
    ['5000 bytes', `/${'a'.repeat(5000)}`],
    ['relative', 'mine.txt'],
    ['relative with ./', './mine.txt'],
  ]
  const auth = { authorization: `Bearer ${token}` }
  for (const [what, p] of hostile) {
    const q = `path=${p}`
    for (const [method, endpoint] of [
      ['GET', 'ls'],
      ['GET', 'cat'],
      ['GET', 'zip'],
      ['POST', 'cat'],
      ['POST', 'mkdir'],
      ['POST', 'touch'],
      ['POST', 'rm'],
    ] as const) {
      const init: RequestInit = { method, headers: auth }
      if (method === 'POST' && endpoint === 'cat') init.body = 'PWNED'
      const text = await expectError(t, await fetch(`${url}/api/files/${endpoint}?${q}`, init), 400, 'INVALID_INPUT', `${what}: ${method} ${endpoint}`)
      t.notMatch(text, /TOP-SECRET/, `${what}: ${method} ${endpoint} reads nothing`)
    }
    await expectError(t, await fetch(`${url}/api/files/mv?from=/mine.txt&to=${p}`, { method: 'POST', headers: auth }), 400, 'INVALID_INPUT', `${what}: mv to`)
    await expectError(t, await fetch(`${url}/api/files/mv?from=${p}&to=/stolen.txt`, { method: 'POST', headers: auth }), 400, 'INVALID_INPUT', `${what}: mv from`)
  }
  t.same(tree(dataDir, outside), before, 'nothing created, moved or removed outside alice\u2019s space')
  t.same(tree(home), ['mine.txt'], 'nothing created inside it either')
  t.ok(statSync(join(dataDir, 'tmp', 'victim', 'secret.txt')).isFile(), 'the victim\u2019s file is still there')
})

t.test('a symlink leading out of the space → 403, nothing read', async (t) => {
  const { url, dataDir } = await startTestServer(t)
  const call = api(url, await tmpSession(url, 'alice'))
  const home = join(dataDir, 'tmp', 'alice')
  mkdirSync(home, { recursive: true })
  mkdirSync(join(dataDir, 'tmp', 'victim'), { recursive: true })
  writeFileSync(join(dataDir, 'tmp', 'victim', 'secret.txt'), 'TOP-SECRET-VICTIM')
  symlinkSync(join(dataDir, 'tmp', 'victim', 'secret.txt'), join(home, 'link.txt'))
  symlinkSync(join(dataDir, 'tmp', 'victim'), join(home, 'linkdir'))
  const read = await expectError(t, await call('GET', '/api/files/cat', { path: '/link.txt' }), 403, 'FORBIDDEN', 'cat through a file link')
  t.notMatch(read, /TOP-SECRET/)
  const list = await expectError(t, await call('GET', '/api/files/ls', { path: '/linkdir/' }), 403, 'FORBIDDEN', 'ls through a dir link')
  t.notMatch(list, /secret\.txt/)
  await expectError(t, await call('POST', '/api/files/cat', { path: '/linkdir/planted.txt' }, { body: 'x' }), 403, 'FORBIDDEN', 'upload through a dir link')
  t.same(readdirSync(join(dataDir, 'tmp', 'victim')), ['secret.txt'], 'nothing planted in the victim\u2019s space')
})

t.test('a malformed raw request does not break the server', async (t) => {
  const { url } = await startTestServer(t)
  const answer = await raw(url, 'THIS IS NOT HTTP\r\n\r\n')
  // 505 is uWS's answer to a request line it cannot read (an HTTP version it does not speak).
  t.notMatch(answer, /^HTTP\/1\.[01] 5(?!05)\d\d/, `no server error (${JSON.stringify(answer.slice(0, 40))})`)
  const bad = await raw(url, 'GET /api/files/ls?path=%ZZ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
  t.match(bad, /^HTTP\/1\.1 4\d\d /, 'a bad percent-encoding: a 4xx')
  const res = await fetch(`${url}/healthz`)
  t.equal(res.status, 200, 'the server still answers')
  await res.arrayBuffer()
})
