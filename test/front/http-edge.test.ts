/**
 * The HTTP edge over raw sockets, on whichever engine serves (FILEGATE_HTTP_ENGINE):
 * HTTP/1.0, requests the parser rejects, pipelining, request-smuggling primitives,
 * repeated credentials, empty bodies and Content-Length of 10^9 and more. Where the
 * uWS engine cannot do what node:http does, the test says so (docs/http-engines.md).
 */
import { mkdirSync, readdirSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import type { Config } from '../../core/config.js'
import { pickEngine } from '../../front/http/engine.js'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'

/** The engine the servers of this run use (as the test helper picks it). */
const ENGINE = pickEngine((process.env.FILEGATE_HTTP_ENGINE ?? 'auto') as Config['http_engine']).engine

interface Exchange {
  /** Everything the server sent, as latin1. */
  readonly text: string
  /** The status of every response in it, in order. */
  readonly statuses: number[]
  /** The server closed the connection (within the wait). */
  readonly closed: boolean
}

/**
 * Writes `parts` on one connection (a pause between parts), and collects what comes
 * back until the server closes, or nothing more comes: `firstMs` after the last part
 * while nothing came, `quietMs` after the last byte received. Every request sent here
 * gets an answer or a close, so `firstMs` only guards against a hang: on a busy machine
 * the first request of a fresh server (its worker threads starting) takes seconds.
 */
/**
 * Sends `parts` on one connection, 100 ms apart, or, with `afterAnswer`, each once the
 * previous request's answer has its head (requests one after the other on a kept
 * connection, as a browser sends them: never pipelined, which uWS does not serve, so a
 * slow answer on a busy machine would otherwise turn the test into a pipelining one).
 */
function raw(port: number, parts: string[], quietMs = 1500, firstMs = 30_000, opts: { readonly afterAnswer?: boolean } = {}): Promise<Exchange> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1')
    const got: Buffer[] = []
    let closed = false
    let timer: NodeJS.Timeout | undefined
    const finish = () => {
      clearTimeout(timer)
      sock.destroy()
      const text = Buffer.concat(got).toString('latin1')
      resolve({ text, statuses: [...text.matchAll(/^HTTP\/1\.[01] (\d{3}) /gm)].map((m) => Number(m[1])), closed })
    }
    const quiet = () => {
      clearTimeout(timer)
      timer = setTimeout(finish, got.length > 0 ? quietMs : firstMs)
    }
    /** Answers whose head has come whole. */
    const heads = () => Buffer.concat(got).toString('latin1').split('\r\n\r\n').length - 1
    let i = 0
    let waiting = false
    const next = () => {
      waiting = false
      if (i >= parts.length) return quiet()
      if (opts.afterAnswer && i > 0 && heads() < i) {
        waiting = true
        return quiet() // a guard: no answer at all ends the exchange after `firstMs`
      }
      sock.write(parts[i++]!, () => (opts.afterAnswer ? next() : setTimeout(next, 100)))
    }
    sock.on('data', (d) => {
      got.push(d)
      if (waiting) next()
      else quiet()
    })
    sock.on('close', () => {
      closed = true
      finish()
    })
    sock.on('error', () => {})
    next()
  })
}

async function setup(t: Test, overrides: Record<string, unknown> = {}) {
  const s = await startTestServer(t, overrides)
  const token = await tmpSession(s.url, 'alice')
  const home = join(s.dataDir, 'tmp', 'alice')
  mkdirSync(home, { recursive: true })
  return { ...s, port: Number(new URL(s.url).port), token, home, call: api(s.url, token), engine: s.app.http.engine }
}

const upload = (token: string, path: string, headers: string) =>
  `POST /api/files/cat?path=${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n${headers}\r\n\r\n`

t.test('HTTP/1.0 requests get an answer', async (t) => {
  const { port, engine } = await setup(t)
  const r = await raw(port, ['GET /healthz HTTP/1.0\r\n\r\n'])
  // uWS 20.51 refuses HTTP/1.0 with 505; node:http serves it.
  t.strictSame(r.statuses, [engine === 'node' ? 200 : 505], `one answer (${engine})`)
  if (engine === 'node') t.match(r.text, /"status":"ok"/, 'the health document')
  t.ok(r.closed, 'and the connection closes, as HTTP/1.0 expects')
})

t.test('requests the parser rejects get a status, then the connection closes', async (t) => {
  const { port, engine } = await setup(t)
  const cases: [string, string, number][] = [
    ['a malformed request line', 'GET /healthz HTTP/1.1 x\r\nHost: x\r\n\r\n', engine === 'node' ? 400 : 505],
    ['headers over 16 KiB', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`, 431],
    ['more than 100 headers', `GET /healthz HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 120 }, (_, i) => `X-H${i}: v\r\n`).join('')}\r\n`, 431],
    ['a Content-Length that is not a number', 'POST /api/files/cat?path=/a HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', 400],
    ['an unknown method (PROPFIND)', 'PROPFIND /api/files/ls?path=/ HTTP/1.1\r\nHost: x\r\n\r\n', 501],
  ]
  // uWS holds a request line without a version until its 10 s timeout, then closes.
  if (engine === 'node') cases.push(['a request line that is not HTTP', 'GARBAGE\r\n\r\n', 400])
  for (const [what, request, status] of cases) {
    const r = await raw(port, [request])
    t.strictSame(r.statuses, [status], `${what}: ${status}`)
    t.ok(r.closed, `${what}: connection closed`)
  }
  const ok = await raw(port, [`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(8 * 1024)}\r\nConnection: close\r\n\r\n`])
  t.strictSame(ok.statuses, [200], 'a header of 8 KiB (over uWS’s default of 4 KiB) is served')
})

// uWS closes a connection on which a request arrives while an answer is pending.
const noPipelining = ENGINE === 'uws' && 'uWS does not answer a request pipelined behind a pending one (docs/http-engines.md)'

t.test('a request pipelined behind a pending upload gets its answer too', { skip: noPipelining }, async (t) => {
  const { port, token, call } = await setup(t)
  const body = 'x'.repeat(100_000)
  const r = await raw(port, [upload(token, '/piped.bin', `Content-Length: ${body.length}`) + body + 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'])
  t.strictSame(r.statuses, [200, 200], 'both answers, in order')
  const back = await call('GET', '/api/files/cat', { path: '/piped.bin' })
  t.equal((await back.text()).length, body.length, 'the upload is complete')
})

t.test('request-smuggling primitives are refused and change nothing', async (t) => {
  const { port, token, home, engine } = await setup(t)
  const cases: [string, string, number][] = [
    ['two different Content-Length headers', 'Content-Length: 3\r\nContent-Length: 5\r\n\r\nabcde', 400],
    ['Transfer-Encoding: xchunked', 'Transfer-Encoding: xchunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n', 400],
    ['Transfer-Encoding: gzip', 'Transfer-Encoding: gzip\r\n\r\n3\r\nabc\r\n0\r\n\r\n', 400],
    ['Transfer-Encoding: chunked, gzip', 'Transfer-Encoding: chunked, gzip\r\n\r\n3\r\nabc\r\n0\r\n\r\n', 400],
    ['Transfer-Encoding: gzip, chunked', 'Transfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n', 501],
  ]
  // uWS skips the two bytes after chunk data without looking at them (docs/http-engines.md).
  if (engine === 'node') cases.push(['chunk data without its CRLF', 'Transfer-Encoding: chunked\r\n\r\n3\r\nabcXX0\r\n\r\n', 400])
  for (const [i, [what, rest, status]] of cases.entries()) {
    const [head, body] = rest.split('\r\n\r\n', 2) as [string, string]
    const r = await raw(port, [upload(token, `/s${i}.txt`, head) + body])
    t.strictSame(r.statuses, [status], `${what}: ${status}`)
    t.ok(r.closed, `${what}: connection closed`)
  }
  t.strictSame(readdirSync(home), [], 'no file written, no temporary file left')

  // A request hidden in the body of a refused one is never answered.
  const hidden = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
  const r = await raw(port, [upload(token, '/s.txt', 'Transfer-Encoding: xchunked') + `0\r\n\r\n${hidden}`])
  t.ok(r.statuses.length <= 1 && r.statuses.every((s) => s === 400), `at most the refusal (${r.statuses.join(', ') || 'none'})`)
  t.notMatch(r.text, /uptime_ms/, 'the hidden request was not served')
  t.ok(r.closed, 'connection closed')
})

t.test('two Authorization headers: 400, whatever they hold', async (t) => {
  const { port, token } = await setup(t)
  for (const second of [`Bearer ${token}`, 'Bearer not-a-token']) {
    const r = await raw(port, [`GET /api/files/ls?path=/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nAuthorization: ${second}\r\n\r\n`])
    t.strictSame(r.statuses, [400], '400')
    t.match(r.text, /"code":"INVALID_INPUT".*authorization header is sent more than once/, 'says why')
  }
})

t.test('an Expect other than 100-continue is served like any request (found by test/fuzz)', async (t) => {
  const { port, token } = await setup(t)
  const r = await raw(port, [`GET /api/files/ls?path=/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nExpect: bytes=0-\r\nConnection: close\r\n\r\n`])
  t.strictSame(r.statuses, [200], 'the listing, not a bare 417')
  t.match(r.text, /x-request-id: /i, 'with its request id')
  t.match(r.text, /"status":"ok"/, 'and the JSON answer')
})

t.test('empty bodies end the response (download, transform output)', async (t) => {
  const plg = { name: 'plg_example', path: fileURLToPath(new URL('../fixtures/plugins/plg_example/index.js', import.meta.url)) }
  const { call } = await setup(t, { plugins: [plg] })
  t.equal((await call('POST', '/api/files/touch', { path: '/e.txt' })).status, 200)
  for (const query of [{}, { upper: '' }]) {
    const what = 'upper' in query ? 'an empty transform output' : 'a 0-byte file'
    const res = await call('GET', '/api/files/cat', { path: '/e.txt', ...query }, { signal: AbortSignal.timeout(5000) })
    t.equal(res.status, 200, `${what}: 200`)
    t.equal(res.headers.get('content-length'), '0', `${what}: Content-Length: 0`)
    t.equal(await res.text(), '', `${what}: the body ends`)
  }
  const head = await call('HEAD', '/api/files/cat', { path: '/e.txt' }, { signal: AbortSignal.timeout(5000) })
  t.equal(head.headers.get('content-length'), '0', 'HEAD announces 0 bytes')
  const headT = await call('HEAD', '/api/files/cat', { path: '/e.txt', upper: '' }, { signal: AbortSignal.timeout(5000) })
  t.equal(headT.status, 200)
  t.equal(headT.headers.get('content-length'), null, 'HEAD of a transformed download announces no length (it is not known)')
})

t.test('a quick answer to a request without a body keeps the connection open', async (t) => {
  const { port } = await setup(t)
  const next = 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
  for (const [what, request, status] of [
    ['a preflight', 'OPTIONS /api/files/ls HTTP/1.1\r\nHost: x\r\nOrigin: https://a.example\r\nAccess-Control-Request-Method: GET\r\n\r\n', 204],
    ['a POST without credentials', 'POST /api/files/mkdir?path=/x/ HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n', 401],
  ] as const) {
    const r = await raw(port, [request, next], undefined, undefined, { afterAnswer: true })
    t.strictSame(r.statuses, [status, 200], `${what}, then another request on the same connection`)
    t.notMatch(r.text, /content-length: 9\d{15,}/i, 'no absurd Content-Length')
  }
})

t.test('a HEAD answer keeps the connection open, with its Content-Length', async (t) => {
  const { port, token, call } = await setup(t)
  t.equal((await call('POST', '/api/files/cat', { path: '/h.txt' }, { body: 'hello' })).status, 200)
  const auth = `Host: x\r\nAuthorization: Bearer ${token}\r\n`
  const next = `GET /api/files/cat?path=/h.txt HTTP/1.1\r\n${auth}Connection: close\r\n\r\n`
  for (const [what, path, status, length] of [
    ['a file', '/api/files/cat?path=/h.txt', 200, '5'],
    ['an error', '/api/files/cat?path=/missing.txt', 404, null],
  ] as const) {
    const r = await raw(port, [`HEAD ${path} HTTP/1.1\r\n${auth}\r\n`, next], undefined, undefined, { afterAnswer: true })
    t.strictSame(r.statuses, [status, 200], `HEAD of ${what}, then another request on the same connection`)
    const head = r.text.slice(0, r.text.indexOf('\r\n\r\n'))
    if (length !== null) t.match(head, new RegExp(`^content-length: ${length}\r?$`, 'im'), 'HEAD announces the length of the body it leaves out')
    t.match(r.text, /hello$/, 'the next answer is whole')
  }
})

t.test('answers announce how long an idle connection is kept, and keep it that long', async (t) => {
  const { port } = await setup(t)
  const sock = connect(port, '127.0.0.1')
  t.teardown(() => sock.destroy())
  let text = ''
  sock.setEncoding('latin1').on('data', (d: string) => (text += d))
  const answered = async (n: number) => {
    while ([...text.matchAll(/^HTTP\/1\.1 200 /gm)].length < n) {
      if (sock.destroyed || sock.readableEnded) return false
      await new Promise((r) => setTimeout(r, 20))
    }
    return true
  }
  sock.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
  t.ok(await answered(1), 'the first answer')
  const hint = /^keep-alive: timeout=(\d+)\r?$/im.exec(text)?.[1]
  t.ok(hint, 'it says how long the connection may stay idle (Keep-Alive: timeout=N)')
  // Clients retire an idle connection a second before the announced time (Node's agent, undici).
  await new Promise((r) => setTimeout(r, (Number(hint ?? 1) - 1) * 1000))
  sock.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
  t.ok(await answered(2), 'the connection, idle that long, still answers')
})

t.test('a Content-Length of 10^9 bytes and more is read', async (t) => {
  const { port, token } = await setup(t, { max_upload_bytes: 1_500_000_000 })
  const over = await raw(port, [upload(token, '/big.bin', 'Content-Length: 2000000000')])
  t.strictSame(over.statuses, [413], 'over max_upload_bytes: 413, not a silent close')
  t.match(over.text, /"code":"TOO_LARGE"/)
})

t.test('an upload announcing 10^9 bytes starts, and leaves nothing when cut', async (t) => {
  const { port, token, home } = await setup(t)
  const sock = connect(port, '127.0.0.1')
  sock.on('error', () => {})
  sock.write(upload(token, '/big.bin', 'Content-Length: 1000000000'))
  sock.write(Buffer.alloc(4 * 1024 * 1024))
  await until(t, () => readdirSync(home).some((n) => n.endsWith('.part')), 'the upload started')
  sock.destroy()
  await until(t, () => readdirSync(home).length === 0, 'the client left: nothing stays')
})

async function until(t: Test, cond: () => boolean, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!cond() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25))
  t.ok(cond(), what)
}

