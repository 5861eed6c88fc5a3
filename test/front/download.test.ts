/**
 * @module test/front/download.test
 * GET and HEAD /api/files/cat over real HTTP (docs/api.md, "Files"): headers, ranges,
 * conditional requests, Content-Disposition, big files and a slow reader.
 */
import { createHash, randomBytes } from 'node:crypto'
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { connect } from 'node:net'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'

type Call = ReturnType<typeof api>

async function expectError(t: Test, res: Response, status: number, code: string, what: string): Promise<void> {
  t.equal(res.status, status, `${what}: HTTP ${status}`)
  const body = (await res.json()) as Record<string, unknown>
  t.same(body, { status: 'error', code, message: body.message }, `${what}: envelope with code ${code}`)
}

async function setup(t: Test, files: Record<string, string | Buffer> = {}) {
  const { url, dataDir } = await startTestServer(t)
  const token = await tmpSession(url, 'alice')
  const home = join(dataDir, 'tmp', 'alice')
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(join(home, rel, '..'), { recursive: true })
    writeFileSync(join(home, rel), content)
  }
  const call: Call = api(url, token)
  return { url, token, home, call }
}

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex')

/** Sends a raw request and reads everything until the server closes, or `quietMs` after the head. */
function raw(url: string, text: string, quietMs = 500): Promise<{ head: string; body: Buffer }> {
  const { port } = new URL(url)
  return new Promise((resolve, reject) => {
    const sock = connect(Number(port), '127.0.0.1')
    const parts: Buffer[] = []
    let timer: NodeJS.Timeout | undefined
    const finish = () => {
      clearTimeout(timer)
      sock.destroy()
      const all = Buffer.concat(parts)
      const end = all.indexOf('\r\n\r\n')
      if (end < 0) return reject(new Error(`no response head: ${JSON.stringify(all.toString('latin1'))}`))
      resolve({ head: all.subarray(0, end).toString('latin1'), body: all.subarray(end + 4) })
    }
    sock.on('data', (d) => {
      parts.push(d)
      if (!timer && Buffer.concat(parts).includes('\r\n\r\n')) timer = setTimeout(finish, quietMs)
    })
    sock.on('end', finish)
    sock.on('error', reject)
    sock.write(text)
  })
}

const TEXT = 'The quick brown fox jumps over the lazy dog.\n' // 45 bytes

t.test('GET: content and headers', async (t) => {
  const { call } = await setup(t, { 'docs/fox.txt': TEXT })
  const res = await call('GET', '/api/files/cat', { path: '/docs/fox.txt' })
  t.equal(res.status, 200)
  t.equal(await res.text(), TEXT, 'the bytes')
  t.match(res.headers.get('content-type') ?? '', /^text\/plain/, 'Content-Type from the extension')
  t.equal(res.headers.get('content-length'), String(Buffer.byteLength(TEXT)))
  t.equal(res.headers.get('accept-ranges'), 'bytes')
  const etag = res.headers.get('etag')
  t.match(etag ?? '', /^(W\/)?"[^"]+"$/, 'a quoted ETag')
  const lm = res.headers.get('last-modified')
  t.ok(lm && Math.abs(Date.parse(lm) - Date.now()) < 60_000, `Last-Modified close to now (${lm})`)
  t.equal(res.headers.get('content-disposition'), null, 'no Content-Disposition without name=')
  t.equal(res.headers.get('x-content-type-options'), 'nosniff', 'uploaded content is not sniffed into a page')
})

t.test('GET: Content-Type follows the extension', async (t) => {
  const { call } = await setup(t, { 'a.json': '{}', 'b.html': '<p>', 'c.png': 'x', 'd.unknownext': 'x', noext: 'x', 'e.TXT': 'x' })
  const types: [string, RegExp][] = [
    ['/a.json', /^application\/json/],
    ['/b.html', /^text\/html/],
    ['/c.png', /^image\/png$/],
    ['/d.unknownext', /^application\/octet-stream$/],
    ['/noext', /^application\/octet-stream$/],
    ['/e.TXT', /^text\/plain/],
  ]
  for (const [path, type] of types) {
    const res = await call('GET', '/api/files/cat', { path })
    await res.arrayBuffer()
    t.match(res.headers.get('content-type') ?? '', type, path)
  }
})

t.test('GET: Last-Modified and ETag follow the file', async (t) => {
  const { call, home } = await setup(t, { 'f.txt': 'one' })
  const when = new Date('2021-03-04T05:06:07Z')
  utimesSync(join(home, 'f.txt'), when, when)
  const first = await call('GET', '/api/files/cat', { path: '/f.txt' })
  await first.arrayBuffer()
  t.equal(first.headers.get('last-modified'), when.toUTCString(), 'the file\u2019s mtime')
  writeFileSync(join(home, 'f.txt'), 'changed')
  const second = await call('GET', '/api/files/cat', { path: '/f.txt' })
  t.equal(await second.text(), 'changed')
  t.not(second.headers.get('etag'), first.headers.get('etag'), 'a changed file gets another ETag')
})

t.test('Range: bytes=a-b, a-, -n → 206 with the exact bytes', async (t) => {
  const { call } = await setup(t, { 'fox.txt': TEXT })
  const size = Buffer.byteLength(TEXT)
  const cases: [string, number, number][] = [
    ['bytes=4-8', 4, 8],
    ['bytes=0-0', 0, 0],
    ['bytes=40-', 40, size - 1],
    ['bytes=-4', size - 4, size - 1],
    ['bytes=10-1000', 10, size - 1], // an end past the file is cut at the end
    ['bytes=-1000', 0, size - 1], // a suffix longer than the file is the whole file
  ]
  for (const [range, start, end] of cases) {
    const res = await call('GET', '/api/files/cat', { path: '/fox.txt' }, { headers: { range } })
    t.equal(res.status, 206, `${range}: 206`)
    t.equal(res.headers.get('content-range'), `bytes ${start}-${end}/${size}`, `${range}: Content-Range`)
    t.equal(res.headers.get('content-length'), String(end - start + 1), `${range}: Content-Length`)
    t.equal(await res.text(), TEXT.slice(start, end + 1), `${range}: the bytes`)
  }
})

t.test('Range: unsatisfiable or malformed → 416', async (t) => {
  const { call } = await setup(t, { 'fox.txt': TEXT })
  const size = Buffer.byteLength(TEXT)
  for (const range of [`bytes=${size}-`, `bytes=${size + 10}-${size + 20}`, 'bytes=-0']) {
    const res = await call('GET', '/api/files/cat', { path: '/fox.txt' }, { headers: { range } })
    t.equal(res.headers.get('content-range'), `bytes */${size}`, `${range}: Content-Range bytes */size`)
    await expectError(t, res, 416, 'RANGE_NOT_SATISFIABLE', range)
  }
  for (const range of ['bytes=abc', 'bytes=5-2', 'bytes=-', 'items=0-5', 'bytes 0-5']) {
    const res = await call('GET', '/api/files/cat', { path: '/fox.txt' }, { headers: { range } })
    await expectError(t, res, 416, 'RANGE_NOT_SATISFIABLE', `malformed ${range}`)
  }
})

t.test('If-None-Match with the ETag → 304 without a body', async (t) => {
  const { call, url, token } = await setup(t, { 'fox.txt': TEXT })
  const first = await call('GET', '/api/files/cat', { path: '/fox.txt' })
  await first.arrayBuffer()
  const etag = first.headers.get('etag')!
  const res = await call('GET', '/api/files/cat', { path: '/fox.txt' }, { headers: { 'if-none-match': etag } })
  t.equal(res.status, 304)
  t.equal(res.headers.get('etag'), etag, 'the ETag is repeated')
  t.equal((await res.arrayBuffer()).byteLength, 0)
  const other = await call('GET', '/api/files/cat', { path: '/fox.txt' }, { headers: { 'if-none-match': '"something-else"' } })
  t.equal(other.status, 200, 'another ETag → the file')
  t.equal(await other.text(), TEXT)
  const listed = await call('GET', '/api/files/cat', { path: '/fox.txt' }, { headers: { 'if-none-match': `"x", ${etag}` } })
  t.equal(listed.status, 304, 'the ETag in a list → 304')
  // On the wire: nothing after the head.
  const r = await raw(
    url,
    `GET /api/files/cat?path=/fox.txt HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nIf-None-Match: ${etag}\r\nConnection: close\r\n\r\n`,
  )
  t.match(r.head, /^HTTP\/1\.1 304 /)
  t.equal(r.body.length, 0, 'no body bytes on the wire')
})

t.test('If-Modified-Since → 304; an older date → 200', async (t) => {
  const { call, home } = await setup(t, { 'fox.txt': TEXT })
  const when = new Date('2022-01-01T00:00:00Z')
  utimesSync(join(home, 'fox.txt'), when, when)
  const same = await call('GET', '/api/files/cat', { path: '/fox.txt' }, { headers: { 'if-modified-since': when.toUTCString() } })
  t.equal(same.status, 304, 'not modified since its own mtime')
  const later = await call('GET', '/api/files/cat', { path: '/fox.txt' }, { headers: { 'if-modified-since': new Date('2023-01-01').toUTCString() } })
  t.equal(later.status, 304, 'not modified since a later date')
  const earlier = await call('GET', '/api/files/cat', { path: '/fox.txt' }, { headers: { 'if-modified-since': new Date('2021-01-01').toUTCString() } })
  t.equal(earlier.status, 200, 'modified since an earlier date')
  t.equal(await earlier.text(), TEXT)
  const junk = await call('GET', '/api/files/cat', { path: '/fox.txt' }, { headers: { 'if-modified-since': 'not a date' } })
  t.equal(junk.status, 200, 'a date that does not parse is ignored')
  await junk.arrayBuffer()
})

t.test('name= → Content-Disposition: attachment', async (t) => {
  const { call } = await setup(t, { 'fox.txt': TEXT })
  const named = await call('GET', '/api/files/cat', { path: '/fox.txt', name: 'report.txt' })
  t.equal(await named.text(), TEXT)
  const cd = named.headers.get('content-disposition') ?? ''
  t.match(cd, /^attachment;/, 'attachment')
  t.match(cd, /filename="report\.txt"/, 'the name')
  const utf = await call('GET', '/api/files/cat', { path: '/fox.txt', name: 'r\u00e9sum\u00e9 \u6587\u4ef6.txt' })
  await utf.arrayBuffer()
  const cdu = utf.headers.get('content-disposition') ?? ''
  t.match(cdu, /^attachment;/)
  t.ok(cdu.includes(`filename*=UTF-8''${encodeURIComponent('r\u00e9sum\u00e9 \u6587\u4ef6.txt')}`), `the UTF-8 name, RFC 5987 encoded (${cdu})`)
  t.ok(/^[\x20-\x7e]*$/.test(cdu), 'the header itself is ASCII')
  const quote = await call('GET', '/api/files/cat', { path: '/fox.txt', name: 'a"b\r\nX-Evil: 1.txt' })
  await quote.arrayBuffer()
  t.equal(quote.headers.get('x-evil'), null, 'no header injection through name=')
  t.notOk(/filename="[^"]*"[^;]/.test(quote.headers.get('content-disposition') ?? ''), 'the quote cannot end the filename early')
})

t.test('HEAD: the same headers, no body', async (t) => {
  const { call, url, token } = await setup(t, { 'fox.txt': TEXT })
  const get = await call('GET', '/api/files/cat', { path: '/fox.txt' })
  await get.arrayBuffer()
  const head = await call('HEAD', '/api/files/cat', { path: '/fox.txt' })
  t.equal(head.status, 200)
  for (const h of ['content-type', 'content-length', 'last-modified', 'etag', 'accept-ranges']) {
    t.equal(head.headers.get(h), get.headers.get(h), `HEAD ${h} as GET`)
  }
  const ranged = await call('HEAD', '/api/files/cat', { path: '/fox.txt' }, { headers: { range: 'bytes=0-9' } })
  t.equal(ranged.status, 206, 'HEAD with a Range')
  t.equal(ranged.headers.get('content-range'), `bytes 0-9/${Buffer.byteLength(TEXT)}`)
  const r = await raw(url, `HEAD /api/files/cat?path=/fox.txt HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`)
  t.match(r.head, /^HTTP\/1\.1 200 /)
  t.match(r.head, new RegExp(`\r\ncontent-length: ${Buffer.byteLength(TEXT)}\r?(\n|$)`, 'i'), 'Content-Length announced')
  t.equal(r.body.length, 0, 'no body bytes on the wire')
  const missing = await call('HEAD', '/api/files/cat', { path: '/nope.txt' })
  t.equal(missing.status, 404, 'HEAD of a missing file → 404')
})

t.test('a directory → 400, a missing file → 404', async (t) => {
  const { call } = await setup(t, { 'dir/inner.txt': 'x' })
  await expectError(t, await call('GET', '/api/files/cat', { path: '/dir' }), 400, 'INVALID_INPUT', 'directory without slash')
  await expectError(t, await call('GET', '/api/files/cat', { path: '/dir/' }), 400, 'INVALID_INPUT', 'directory with slash')
  await expectError(t, await call('GET', '/api/files/cat', { path: '/' }), 400, 'INVALID_INPUT', 'the root')
  await expectError(t, await call('GET', '/api/files/cat', { path: '/missing.txt' }), 404, 'NOT_FOUND', 'missing')
  await expectError(t, await call('GET', '/api/files/cat', { path: '/dir/inner.txt/x' }), 400, 'INVALID_INPUT', 'a file used as a directory')
})

const BIG = 21 * 1024 * 1024 + 12345

t.test('a 21 MiB file downloads intact', { timeout: 30_000 }, async (t) => {
  const big = randomBytes(BIG)
  const { call } = await setup(t, { 'big.bin': big })
  const res = await call('GET', '/api/files/cat', { path: '/big.bin' }, { signal: AbortSignal.timeout(20_000) })
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-length'), String(BIG))
  const got = Buffer.from(await res.arrayBuffer())
  t.equal(got.length, BIG)
  t.equal(sha(got), sha(big), 'sha256 matches')
  const tail = await call('GET', '/api/files/cat', { path: '/big.bin' }, { headers: { range: `bytes=${BIG - 3_000_000}-` }, signal: AbortSignal.timeout(20_000) })
  t.equal(tail.status, 206)
  t.equal(sha(Buffer.from(await tail.arrayBuffer())), sha(big.subarray(BIG - 3_000_000)), 'a big range is intact too')
})

t.test('a big download read slowly by the client still arrives intact', { timeout: 30_000 }, async (t) => {
  const big = randomBytes(BIG)
  const { url, token } = await setup(t, { 'big.bin': big })
  const { port } = new URL(url)
  const result = await new Promise<{ status: number; hash: string; length: number }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: Number(port), path: '/api/files/cat?path=/big.bin', headers: { authorization: `Bearer ${token}` } })
    req.setTimeout(10_000, () => req.destroy(new Error('the download stalled for 10 s')))
    req.on('error', reject)
    req.on('response', (res) => {
      const hash = createHash('sha256')
      let length = 0
      let sincePause = 0
      // Let the server fill every buffer before reading anything.
      res.pause()
      setTimeout(() => res.resume(), 400)
      res.on('data', (chunk: Buffer) => {
        hash.update(chunk)
        length += chunk.length
        sincePause += chunk.length
        if (sincePause >= 3 * 1024 * 1024) {
          sincePause = 0
          res.pause()
          setTimeout(() => res.resume(), 60)
        }
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, hash: hash.digest('hex'), length }))
      res.on('error', reject)
      res.on('aborted', () => reject(new Error(`the download was cut after ${length} bytes`)))
    })
    req.end()
  })
  t.equal(result.status, 200)
  t.equal(result.length, BIG, 'every byte')
  t.equal(result.hash, sha(big), 'sha256 matches')
})
