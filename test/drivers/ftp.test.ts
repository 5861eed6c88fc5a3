/**
 * @module test/drivers/ftp.test
 * The conformance suite against the ftp driver and a real vsftpd (started here, on
 * a free port, for a throwaway user), each test in a fresh folder of the user's
 * home. Then what only FTP has: LIST parsing, symlinks seen through LIST and PWD,
 * FTPS, and sessions that survive a server restart.
 */
import { randomBytes } from 'node:crypto'
import { chownSync, existsSync, lchownSync, mkdirSync, readdirSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs'
import { type AddressInfo, createServer } from 'node:net'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { Driver, Entry } from '../../core/driver.js'
import { type FtpConfig, createFtpDriver, parseListDate } from '../../workers/drivers/ftp/index.js'
import { removeTree } from '../../workers/ops.js'
import { api, startTestServer } from '../helpers/filegate.js'
import { freePort } from '../servers/process.js'
import { startVsftpd } from '../servers/vsftpd.js'
import { ctx, runDriverSuite } from './suite.js'
import { userFolder } from '../servers/users.js'

/**
 * A refusal is answered on the refusal itself, not after a backend timeout or a retry
 * loop: the error's code already tells a refusal from a timeout, and this bound (the
 * default backend timeout, 20 s) only catches an answer held that long. Not tighter: a
 * busy machine takes seconds over a fresh server's first login.
 */
const QUICK_MS = 20_000

const ftpd = await startVsftpd(t)
const base = { hostname: '127.0.0.1', port: ftpd.port, username: ftpd.username, password: ftpd.password, secure: false }

/** A fresh folder in the user's home, owned by the user. */
const folder = (): string => userFolder(ftpd)

await runDriverSuite(t, {
  name: 'ftp',
  makeDriver: async () => createFtpDriver({ ...base, root: folder() }),
})

/** A driver over a fresh folder (`dir`, its absolute path on this machine), closed at teardown. */
const open = async (t: Test, cfg: Partial<FtpConfig> = {}): Promise<Driver & { dir: string }> => {
  const root = folder()
  const d = await createFtpDriver({ ...base, root, ...cfg })
  t.teardown(() => d.close())
  return Object.assign(d, { dir: join(ftpd.root, root) })
}

async function listAll(d: Driver, dir: string): Promise<Entry[]> {
  const all: Entry[] = []
  for await (const page of d.list(ctx(), dir)) all.push(...page)
  return all.sort((a, b) => (a.name < b.name ? -1 : 1))
}

t.test('LIST dates: with a time (this year or last), with a year', async (t) => {
  const now = Date.UTC(2026, 10, 22, 18, 0)
  t.equal(parseListDate('Nov 22 17:02', now), Date.UTC(2026, 10, 22, 17, 2))
  t.equal(parseListDate('Dec 24 10:00', now), Date.UTC(2025, 11, 24, 10, 0), 'a date ahead of now is last year')
  t.equal(parseListDate('Apr 18 2025', now), Date.UTC(2025, 3, 18))
  t.equal(parseListDate('Apr  8  2025', now), Date.UTC(2025, 3, 8))
  t.equal(parseListDate('yesterday', now), null)
})

t.test('features: honest about what vsftpd lacks (no MLSD, no MFMT)', async (t) => {
  const d = await open(t)
  t.same(d.features, { emptyDirs: true, atomicRename: false, rangeRead: true, mtimePrecisionMs: null, refusedNameChars: '' })
  t.equal(d.setMtime, undefined, 'no setMtime without MFMT')
})

t.test('times: stat has MDTM seconds; a listing has LIST minutes', async (t) => {
  const d = await open(t)
  const before = Date.now()
  await d.write(ctx(), '/f', (async function* () {
    yield Buffer.from('x')
  })())
  const after = Date.now()
  const st = await d.stat(ctx(), '/f')
  // Whole seconds: within the write's own time, however long a busy machine took for it.
  t.ok(st.mtimeMs !== null && st.mtimeMs >= before - 1000 && st.mtimeMs <= after + 1000, `stat mtime ${st.mtimeMs} within the write (${before}..${after})`)
  const [e] = await listAll(d, '/')
  t.ok(e?.mtimeMs !== null && e !== undefined && Math.abs(e.mtimeMs! - before) < 61_000, `listed mtime ${e?.mtimeMs} within a minute`)
})

t.test('empty root is the login folder; an absolute root works', async (t) => {
  writeFileSync(join(ftpd.root, 'marker.txt'), 'here')
  const d = await open(t, { root: '' })
  t.match(await d.stat(ctx(), '/marker.txt'), { kind: 'file', size: 4 })
  const abs = await open(t, { root: ftpd.root })
  t.match(await abs.stat(ctx(), '/marker.txt'), { kind: 'file', size: 4 })
})

t.test('a missing root folder is ENOENT', async (t) => {
  await t.rejects(createFtpDriver({ ...base, root: 'no/such/folder' }), { code: 'ENOENT' })
})

t.test('wrong password → EAUTH, quickly', async (t) => {
  const started = Date.now()
  await t.rejects(createFtpDriver({ ...base, password: 'wrong', root: '' }), { code: 'EAUTH' })
  t.ok(Date.now() - started < QUICK_MS, `answered in ${Date.now() - started} ms`)
})

t.test('a server that accepts but never answers → ETIMEDOUT, within the timeout', async (t) => {
  const silent = createServer(() => {})
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    silent.close()
  })
  const port = (silent.address() as AddressInfo).port
  const started = Date.now()
  await t.rejects(createFtpDriver({ ...base, port, root: '', timeoutMs: 500 }), { code: 'ETIMEDOUT' })
  t.ok(Date.now() - started < 5000, `gave up after ${Date.now() - started} ms`)
})

t.test('nothing listening → EUNAVAILABLE', async (t) => {
  await t.rejects(createFtpDriver({ ...base, port: await freePort(), root: '' }), { code: 'EUNAVAILABLE' })
})

t.test('symlinks: followed and marked in listings and stat; a dangling one is not listed; remove takes the link only', async (t) => {
  const d = await open(t)
  writeFileSync(join(d.dir, 'target.txt'), 'abc')
  mkdirSync(join(d.dir, 'sub'))
  writeFileSync(join(d.dir, 'sub', 'inside'), 'keep me')
  symlinkSync('target.txt', join(d.dir, 'to-file'))
  symlinkSync('sub', join(d.dir, 'to-dir'))
  symlinkSync('nowhere', join(d.dir, 'dangling'))
  for (const n of ['target.txt', 'sub', 'sub/inside']) chownSync(join(d.dir, n), ftpd.uid, ftpd.gid)
  for (const n of ['to-file', 'to-dir', 'dangling']) lchownSync(join(d.dir, n), ftpd.uid, ftpd.gid)
  const all = await listAll(d, '/')
  t.match(all, [
    { name: 'sub', kind: 'dir' },
    { name: 'target.txt', kind: 'file', size: 3 },
    { name: 'to-dir', kind: 'dir', link: true },
    { name: 'to-file', kind: 'file', size: 3, link: true },
  ])
  t.equal(all.length, 4)
  t.match(await d.stat(ctx(), '/to-dir'), { kind: 'dir', link: true }, 'stat of a linked folder says so (PWD)')
  t.notOk((await d.stat(ctx(), '/sub')).link, 'a plain folder is no link')
  await d.remove(ctx(), '/to-dir')
  t.ok(existsSync(join(d.dir, 'sub', 'inside')), 'the linked folder and its content stay')
  t.notOk(readdirSync(d.dir).includes('to-dir'), 'the link is gone')
})

t.test('a folder whose name has quotes is no link (PWD quotes are doubled), and rm -r walks into it', async (t) => {
  const d = await open(t)
  const name = '" \' "" @ < > & ? + ≠'
  await d.mkdir(ctx(), `/${name}`)
  await d.write(ctx(), `/${name}/f`, (async function* () {
    yield Buffer.from('x')
  })())
  const st = await d.stat(ctx(), `/${name}`)
  t.match(st, { kind: 'dir', name })
  t.notOk(st.link, 'not marked as a link')
  await removeTree(ctx(), d, `/${name}`)
  t.same(readdirSync(d.dir), [], 'removed with its content')
})

t.test('FTPS (explicit AUTH TLS)', async (t) => {
  const tls = await startVsftpd(t, { tls: true })
  const cfg = { hostname: '127.0.0.1', port: tls.port, username: tls.username, password: tls.password, root: '' }
  const d = await createFtpDriver({ ...cfg, secure: true, tls: { ca: tls.cert! } })
  t.teardown(() => d.close())
  const data = randomBytes(3 * 1024 * 1024 + 11)
  await d.write(ctx(), '/secret.bin', (async function* () {
    yield data
  })())
  const parts: Buffer[] = []
  for await (const c of d.read(ctx(), '/secret.bin')) parts.push(Buffer.from(c))
  t.ok(Buffer.concat(parts).equals(data), 'round trip over TLS')
  t.match((await listAll(d, '/')).find((e) => e.name === 'secret.bin'), { kind: 'file', size: data.length }, 'listed over TLS')
  await t.rejects(createFtpDriver({ ...cfg, secure: true }), { code: 'EUNAVAILABLE', message: /certificate/ }, 'an untrusted certificate is refused')
  await t.rejects(createFtpDriver({ ...cfg, secure: false }), { code: 'EAUTH' }, 'plain FTP is refused by a server that requires TLS')
})

t.test('the pool survives a server restart: dead sessions are dropped', async (t) => {
  const d = await open(t)
  await d.mkdir(ctx(), '/x')
  await ftpd.stop()
  await t.rejects(d.stat(ctx(), '/x'), { code: 'EUNAVAILABLE' }, 'server down: EUNAVAILABLE')
  await ftpd.start()
  t.match(await d.stat(ctx(), '/x'), { kind: 'dir' }, 'server back: the next call works')
})

// Through the HTTP API ---------------------------------------------------------

t.test('HTTP: login answers, a round trip, and the server stopped mid-download and mid-upload, then restarted', async (t) => {
  // Its own server: stopping it must not disturb the other tests of this file.
  const own = await startVsftpd(t)
  const { url } = await startTestServer(t, { connections: [{ label: 'ftp', type: 'ftp', hostname: '127.0.0.1', port: own.port }] })
  const login = (body: Record<string, unknown>): Promise<Response> =>
    fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'ftp', username: own.username, password: own.password, ...body }) })

  const started = Date.now()
  let res = await login({ password: 'wrong' })
  t.equal(res.status, 401, 'wrong password: 401')
  t.match(await res.json(), { code: 'NOT_AUTHENTICATED' })
  t.ok(Date.now() - started < QUICK_MS, `answered in ${Date.now() - started} ms`)

  const nobody = await startTestServer(t, { connections: [{ label: 'ftp', type: 'ftp', hostname: '127.0.0.1', port: await freePort() }] })
  res = await fetch(`${nobody.url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'ftp', username: 'x', password: 'y' }) })
  t.equal(res.status, 502, 'nothing listening: 502')
  t.match(await res.json(), { code: 'BACKEND_UNREACHABLE' })

  const dir = `http-${randomBytes(4).toString('hex')}`
  mkdirSync(join(own.root, dir))
  chownSync(join(own.root, dir), own.uid, own.gid)
  res = await login({ path: dir })
  const call = api(url, ((await res.json()) as { result: { authorization: string } }).result.authorization)
  const data = randomBytes(9 * 1024 * 1024 + 5)
  res = await call('POST', '/api/files/cat', { path: '/a/b/data.bin' }, { body: data })
  t.equal(res.status, 200, 'upload, parents created')
  await res.body?.cancel()
  res = await call('GET', '/api/files/cat', { path: '/a/b/data.bin' })
  t.ok(Buffer.from(await res.arrayBuffer()).equals(data), 'download: the same bytes')
  res = await call('GET', '/api/files/cat', { path: '/a/b/data.bin' }, { headers: { range: 'bytes=100-199' } })
  t.equal(res.status, 206)
  t.ok(Buffer.from(await res.arrayBuffer()).equals(data.subarray(100, 200)), 'a range')
  res = await call('GET', '/api/files/zip', { path: '/a/' })
  t.equal(res.status, 200, 'zip')
  await res.arrayBuffer()
  res = await call('POST', '/api/files/mv', { from: '/a/', to: '/c/' })
  t.equal(res.status, 200, 'mv')
  await res.body?.cancel()
  res = await call('POST', '/api/files/rm', { path: '/c/' })
  t.equal(res.status, 200, 'rm')
  await res.body?.cancel()
  t.same(readdirSync(join(own.root, dir)), [], 'nothing left, no temporary files')

  // Stopped mid-download: the client sees a cut transfer.
  writeFileSync(join(own.root, dir, 'big.bin'), '')
  truncateSync(join(own.root, dir, 'big.bin'), 512 * 1024 * 1024)
  chownSync(join(own.root, dir, 'big.bin'), own.uid, own.gid)
  res = await call('GET', '/api/files/cat', { path: '/big.bin' })
  t.equal(res.status, 200, 'the download starts')
  const reader = res.body!.getReader()
  let got = (await reader.read()).value?.length ?? 0
  await own.stop()
  const cut = await (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return false
        got += value.length
      }
    } catch {
      return true
    }
  })()
  t.ok(cut && got < 512 * 1024 * 1024, `the download is cut (${got} bytes), not ended as if complete`)

  // Stopped mid-upload: an error answer or a cut connection, and no target file.
  await own.start()
  let sent = 0
  let stopped = false
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent >= 256 * 1024 * 1024) return controller.close()
      if (sent >= 16 * 1024 * 1024 && !stopped) {
        stopped = true
        await own.stop()
      }
      const chunk = randomBytes(1024 * 1024)
      sent += chunk.length
      controller.enqueue(chunk)
    },
  })
  const up = await call('POST', '/api/files/cat', { path: '/upload.bin' }, { body, duplex: 'half' } as RequestInit).then(
    (r) => r.status,
    () => null,
  )
  t.ok(up === null || up >= 500, `the upload fails (${up ?? 'connection cut'})`)
  t.notOk(existsSync(join(own.root, dir, 'upload.bin')), 'no partial target file')

  await own.start()
  res = await call('GET', '/api/files/ls', { path: '/' })
  t.equal(res.status, 200, 'back on the same port: the next request works')
  t.match(((await res.json()) as { results: { name: string }[] }).results, [{ name: 'big.bin' }])
})
