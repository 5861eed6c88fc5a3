/**
 * @module test/front/zip-http.test
 * GET /api/files/zip over real HTTP (docs/api.md, "Files"): headers, entries read
 * back with yauzl from the downloaded bytes, several paths, compression, and errors
 * answered as JSON before any byte.
 */
import { createHash, randomBytes } from 'node:crypto'
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import yauzl from 'yauzl'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'

interface ZipEntry {
  name: string
  data: Buffer
  method: number
  mtime: Date
}

/** Every entry of a zip held in memory, with its bytes (CRC checked by yauzl). */
function readZip(buf: Buffer): Promise<ZipEntry[]> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(buf, { lazyEntries: true, strictFileNames: true, validateEntrySizes: true }, (err, zip) => {
      if (err) return reject(err)
      const out: ZipEntry[] = []
      zip.on('error', reject)
      zip.on('end', () => resolve(out))
      zip.on('entry', (e: yauzl.Entry) => {
        const base = { name: e.fileName, method: e.compressionMethod, mtime: e.getLastModDate() }
        if (e.fileName.endsWith('/')) {
          out.push({ ...base, data: Buffer.alloc(0) })
          return zip.readEntry()
        }
        zip.openReadStream(e, (err2, stream) => {
          if (err2) return reject(err2)
          const parts: Buffer[] = []
          stream.on('data', (d: Buffer) => parts.push(d))
          stream.on('error', reject)
          stream.on('end', () => {
            out.push({ ...base, data: Buffer.concat(parts) })
            zip.readEntry()
          })
        })
      })
      zip.readEntry()
    })
  })
}

async function expectError(t: Test, res: Response, status: number, code: string, what: string): Promise<void> {
  t.equal(res.status, status, `${what}: HTTP ${status}`)
  t.match(res.headers.get('content-type') ?? '', /^application\/json/, `${what}: JSON, not a zip`)
  const body = (await res.json()) as Record<string, unknown>
  t.same(body, { status: 'error', code, message: body.message }, `${what}: envelope with code ${code}`)
}

const MTIME = new Date('2020-06-15T10:20:30Z')

async function setup(t: Test) {
  const { url, dataDir } = await startTestServer(t)
  const call = api(url, await tmpSession(url, 'alice'))
  const home = join(dataDir, 'tmp', 'alice')
  const big = randomBytes(3 * 1024 * 1024 + 17)
  const files: Record<string, string | Buffer> = {
    'docs/readme.txt': 'read me '.repeat(1000),
    'docs/sub/notes.md': '# notes\n',
    'docs/sub/big.bin': big,
    'docs/photo.jpg': randomBytes(5000),
    'top.txt': 'top level',
  }
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(join(home, rel, '..'), { recursive: true })
    writeFileSync(join(home, rel), content)
  }
  mkdirSync(join(home, 'docs', 'empty'))
  utimesSync(join(home, 'docs', 'readme.txt'), MTIME, MTIME)
  return { call, home, files }
}

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex')
const byName = (entries: ZipEntry[]) => Object.fromEntries(entries.map((e) => [e.name, e]))

t.test('one directory: headers, every entry, the empty subdirectory, contents and times', async (t) => {
  const { call, files } = await setup(t)
  const res = await call('GET', '/api/files/zip', { path: '/docs/' })
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'application/zip')
  const cd = res.headers.get('content-disposition') ?? ''
  t.match(cd, /^attachment;/)
  t.match(cd, /filename="docs\.zip"/, 'named after the directory')
  const entries = await readZip(Buffer.from(await res.arrayBuffer()))
  const names = entries.map((e) => e.name)
  for (const n of ['docs/readme.txt', 'docs/sub/notes.md', 'docs/sub/big.bin', 'docs/photo.jpg', 'docs/empty/']) {
    t.ok(names.includes(n), `holds ${n}`)
  }
  t.ok(
    names.every((n) => n.startsWith('docs/')),
    'every name is relative to the parent of /docs',
  )
  t.notOk(
    names.some((n) => n.includes('top.txt')),
    'nothing from outside /docs',
  )
  t.equal(new Set(names).size, names.length, 'no entry twice')
  const e = byName(entries)
  for (const rel of ['docs/readme.txt', 'docs/sub/notes.md', 'docs/sub/big.bin', 'docs/photo.jpg']) {
    t.equal(sha(e[rel]!.data), sha(Buffer.from(files[rel]!)), `${rel}: same bytes`)
  }
  t.ok(Math.abs(e['docs/readme.txt']!.mtime.getTime() - MTIME.getTime()) <= 2000, `modification time kept (${e['docs/readme.txt']!.mtime.toISOString()})`)
  t.equal(e['docs/readme.txt']!.method, 8, 'text is deflated')
  t.equal(e['docs/photo.jpg']!.method, 0, 'an already-compressed format is stored')
})

t.test('a single file: <name>.zip holding just that file', async (t) => {
  const { call } = await setup(t)
  const res = await call('GET', '/api/files/zip', { path: '/top.txt' })
  t.equal(res.status, 200)
  t.match(res.headers.get('content-disposition') ?? '', /filename="top\.txt\.zip"/)
  const entries = await readZip(Buffer.from(await res.arrayBuffer()))
  t.same(
    entries.map((e) => [e.name, e.data.toString()]),
    [['top.txt', 'top level']],
  )
})

t.test('several path params: download.zip with each', async (t) => {
  const { call } = await setup(t)
  const res = await call('GET', '/api/files/zip', { path: ['/top.txt', '/docs/sub/'] })
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'application/zip')
  t.match(res.headers.get('content-disposition') ?? '', /filename="download\.zip"/)
  const names = (await readZip(Buffer.from(await res.arrayBuffer()))).map((e) => e.name)
  t.ok(names.includes('top.txt'), 'the file, by its name')
  t.ok(names.includes('sub/notes.md') && names.includes('sub/big.bin'), 'the directory, relative to its parent')
  t.notOk(
    names.some((n) => n.startsWith('docs/')),
    'no parent folders above the selected paths',
  )
})

t.test('compression=store stores every entry', async (t) => {
  const { call, files } = await setup(t)
  const res = await call('GET', '/api/files/zip', { path: '/docs/', compression: 'store' })
  t.equal(res.status, 200)
  const entries = (await readZip(Buffer.from(await res.arrayBuffer()))).filter((e) => !e.name.endsWith('/'))
  t.ok(entries.length >= 4)
  for (const e of entries) t.equal(e.method, 0, `${e.name} stored`)
  t.equal(byName(entries)['docs/readme.txt']!.data.toString(), files['docs/readme.txt'], 'and intact')
  const auto = await call('GET', '/api/files/zip', { path: '/docs/readme.txt', compression: 'auto' })
  t.equal(auto.status, 200, 'compression=auto is accepted')
  t.equal((await readZip(Buffer.from(await auto.arrayBuffer())))[0]!.method, 8)
})

t.test('errors before the first byte are JSON', async (t) => {
  const { call } = await setup(t)
  await expectError(t, await call('GET', '/api/files/zip', { path: '/missing/' }), 404, 'NOT_FOUND', 'a missing path')
  await expectError(t, await call('GET', '/api/files/zip', { path: ['/top.txt', '/missing.txt'] }), 404, 'NOT_FOUND', 'one missing path among several')
  await expectError(t, await call('GET', '/api/files/zip', { path: '/docs/', compression: 'zstd' }), 400, 'INVALID_INPUT', 'compression=zstd')
  await expectError(t, await call('GET', '/api/files/zip', { path: '/docs/', compression: '' }), 400, 'INVALID_INPUT', 'compression empty')
  await expectError(t, await call('GET', '/api/files/zip'), 400, 'INVALID_INPUT', 'no path')
  await expectError(t, await call('GET', '/api/files/zip', { path: '/../x' }), 400, 'INVALID_INPUT', 'a path above the root')
  await expectError(t, await call('POST', '/api/files/zip', { path: '/docs/' }), 400, 'INVALID_INPUT', 'POST')
})

t.test('a big archive read slowly by the client still arrives intact', { timeout: 30_000 }, async (t) => {
  const { url, dataDir } = await startTestServer(t)
  const token = await tmpSession(url, 'alice')
  const home = join(dataDir, 'tmp', 'alice', 'big')
  mkdirSync(home, { recursive: true })
  const parts = [randomBytes(9 * 1024 * 1024), randomBytes(8 * 1024 * 1024 + 5), randomBytes(6 * 1024 * 1024)]
  parts.forEach((p, i) => writeFileSync(join(home, `part${i}.bin`), p))
  const { port } = new URL(url)
  const got = await new Promise<{ status: number; body: Buffer }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: Number(port), path: '/api/files/zip?path=/big/', headers: { authorization: `Bearer ${token}` } })
    req.setTimeout(10_000, () => req.destroy(new Error('the download stalled for 10 s')))
    req.on('error', reject)
    req.on('response', (res) => {
      const chunks: Buffer[] = []
      let since = 0
      res.pause()
      setTimeout(() => res.resume(), 400)
      res.on('data', (d: Buffer) => {
        chunks.push(d)
        since += d.length
        if (since >= 3 * 1024 * 1024) {
          since = 0
          res.pause()
          setTimeout(() => res.resume(), 60)
        }
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }))
      res.on('aborted', () => reject(new Error('the download was cut')))
      res.on('error', reject)
    })
    req.end()
  })
  t.equal(got.status, 200)
  const e = byName(await readZip(got.body))
  parts.forEach((p, i) => t.equal(sha(e[`big/part${i}.bin`]?.data ?? Buffer.alloc(0)), sha(p), `part${i}.bin intact`))
})
