/**
 * @module test/front/backend-sftp.test
 * The HTTP API end to end on an sftp backend: a real filegate (uWS, worker threads)
 * in front of a real OpenSSH sshd on 127.0.0.1, through a configured `sftp`
 * connection. Every endpoint; the login answers (wrong password, wrong host key,
 * nothing listening); and faults: the server stopped in the middle of a download and
 * of an upload, then restarted on the same port, with filegate left running.
 */
import { createHash, randomBytes } from 'node:crypto'
import { chownSync, existsSync, mkdirSync, readFileSync, readdirSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { api, startTestServer } from '../helpers/filegate.js'
import { freePort } from '../servers/process.js'
import { type Sshd, startSshd } from '../servers/sshd.js'
import { bodyStoppingServer, readToEnd, zipEntryNames } from '../helpers/transfers.js'

/**
 * A refusal is answered on the refusal itself, not after a backend timeout or a retry
 * loop: the error's code already tells a refusal from a timeout, and this bound (the
 * default backend timeout, 20 s) only catches an answer held that long. Not tighter: a
 * busy machine takes seconds over a fresh server's first login.
 */
const QUICK_MS = 20_000

const MiB = 1024 * 1024
const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')

const sshd = await startSshd(t)

/** filegate with an sftp connection fixed to this sshd. */
async function gate(t: Test, port = sshd.port): Promise<string> {
  const { url } = await startTestServer(t, { connections: [{ label: 'sftp', type: 'sftp', hostname: '127.0.0.1', port }] })
  return url
}

/** A fresh folder of the user's home, owned by the user: the session's root. */
function folder(s: Sshd = sshd): { name: string; abs: string } {
  const name = `e2e-${randomBytes(6).toString('hex')}`
  const abs = join(s.root, name)
  mkdirSync(abs)
  chownSync(abs, s.uid, s.gid)
  return { name, abs }
}

async function login(url: string, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'sftp', username: sshd.username, password: sshd.password, ...body }) })
}

async function session(t: Test, url: string, path: string): Promise<ReturnType<typeof api>> {
  const res = await login(url, { path })
  const json = (await res.json()) as { status: string; result: { authorization: string } }
  t.equal(json.status, 'ok', 'session created')
  return api(url, json.result.authorization)
}

async function expectError(t: Test, res: Response, status: number, code: string, what: string): Promise<void> {
  t.equal(res.status, status, `${what}: HTTP ${status}`)
  t.match(await res.json(), { status: 'error', code }, `${what}: ${code}`)
}

/** Reads a body to its end; rejects when the transfer is cut. */
async function drain(res: Response): Promise<number> {
  let n = 0
  for await (const c of res.body as unknown as AsyncIterable<Uint8Array>) n += c.length
  return n
}

t.test('every endpoint on sftp', async (t) => {
  const url = await gate(t)
  const { name, abs } = folder()
  const call = await session(t, url, name)

  const ls = async (path: string) => ((await (await call('GET', '/api/files/ls', { path })).json()) as { results: { name: string; type: string; size: number; time: number }[] }).results
  t.same(await ls('/'), [], 'empty root')

  // Upload (parents created) and download of a multi-MiB file.
  const data = randomBytes(24 * MiB + 123)
  let res = await call('POST', '/api/files/cat', { path: '/docs/big.bin' }, { body: data })
  t.equal(res.status, 200, 'upload')
  await res.body?.cancel()
  t.equal(sha256(readFileSync(join(abs, 'docs', 'big.bin'))), sha256(data), 'on the server: the same bytes')
  res = await call('GET', '/api/files/cat', { path: '/docs/big.bin' })
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-length'), String(data.length))
  t.equal(sha256(new Uint8Array(await res.arrayBuffer())), sha256(data), 'download: sha256 matches')

  res = await call('GET', '/api/files/cat', { path: '/docs/big.bin' }, { headers: { range: `bytes=${5 * MiB}-${6 * MiB + 9}` } })
  t.equal(res.status, 206, 'range')
  t.equal(sha256(new Uint8Array(await res.arrayBuffer())), sha256(data.subarray(5 * MiB, 6 * MiB + 10)), 'range bytes')

  res = await call('HEAD', '/api/files/cat', { path: '/docs/big.bin' })
  t.equal(res.status, 200, 'HEAD')
  t.equal(res.headers.get('content-length'), String(data.length))

  res = await call('POST', '/api/files/cat', { path: '/docs/big.bin', overwrite: 'false' }, { body: 'x' })
  await expectError(t, res, 409, 'CONFLICT', 'upload overwrite=false onto a file')

  // mkdir, touch, ls.
  res = await call('POST', '/api/files/mkdir', { path: '/projects/' })
  t.equal(res.status, 200, 'mkdir')
  await res.body?.cancel()
  await expectError(t, await call('POST', '/api/files/mkdir', { path: '/projects/' }), 409, 'CONFLICT', 'mkdir again')
  res = await call('POST', '/api/files/touch', { path: '/projects/notes.md' })
  t.equal(res.status, 200, 'touch')
  await res.body?.cancel()
  t.match(await ls('/projects/'), [{ name: 'notes.md', type: 'file', size: 0 }])
  t.match(await ls('/'), [{ name: 'docs', type: 'directory' }, { name: 'projects', type: 'directory' }])

  // zip of a folder and a file.
  writeFileSync(join(abs, 'docs', 'hello.txt'), 'hello filegate')
  chownSync(join(abs, 'docs', 'hello.txt'), sshd.uid, sshd.gid)
  res = await call('GET', '/api/files/zip', { path: ['/docs/', '/projects/notes.md'] })
  t.equal(res.status, 200, 'zip')
  const zipped = Buffer.from(await res.arrayBuffer())
  const names = await zipEntryNames(zipped)
  t.same(names.sort(), ['docs/', 'docs/big.bin', 'docs/hello.txt', 'notes.md'], 'zip entries')

  // mv, rm.
  res = await call('POST', '/api/files/mv', { from: '/docs/hello.txt', to: '/projects/hi.txt' })
  t.equal(res.status, 200, 'mv')
  await res.body?.cancel()
  t.equal(await (await call('GET', '/api/files/cat', { path: '/projects/hi.txt' })).text(), 'hello filegate')
  await expectError(t, await call('GET', '/api/files/cat', { path: '/docs/hello.txt' }), 404, 'NOT_FOUND', 'moved away')
  res = await call('POST', '/api/files/mv', { from: '/docs/', to: '/archive/2024/docs/' })
  t.equal(res.status, 200, 'mv a folder into new parents')
  await res.body?.cancel()
  t.ok(existsSync(join(abs, 'archive', '2024', 'docs', 'big.bin')))
  res = await call('POST', '/api/files/rm', { path: '/archive/' })
  t.equal(res.status, 200, 'rm a tree')
  await res.body?.cancel()
  t.same(readdirSync(abs).sort(), ['projects'], 'what is left on the server (no temporary files)')
  await expectError(t, await call('GET', '/api/files/ls', { path: '/nothing/' }), 404, 'NOT_FOUND', 'ls missing')
})


t.test('login answers', async (t) => {
  const url = await gate(t)
  let started = Date.now()
  await expectError(t, await login(url, { password: 'wrong' }), 401, 'NOT_AUTHENTICATED', 'wrong password')
  t.ok(Date.now() - started < QUICK_MS, `wrong password answered in ${Date.now() - started} ms`)

  let res = await login(url, { hostkey: sshd.hostkeyFingerprint })
  t.equal(res.status, 200, 'the right host key')
  await res.body?.cancel()
  const wrong = `SHA256:${randomBytes(32).toString('base64').replace(/=+$/, '')}`
  res = await login(url, { hostkey: wrong })
  t.equal(res.status, 502, 'a wrong host key is refused')
  t.match(await res.json(), { code: 'BACKEND_UNREACHABLE', message: /host key/ })

  res = await login(url, { password: undefined, private_key: sshd.privateKey })
  t.equal(res.status, 200, 'private key login')
  await res.body?.cancel()

  started = Date.now()
  const nobody = await gate(t, await freePort())
  await expectError(t, await login(nobody, {}), 502, 'BACKEND_UNREACHABLE', 'nothing listening')
  t.ok(Date.now() - started < QUICK_MS, `answered promptly (${Date.now() - started} ms)`)
})

t.test('faults: sshd stopped mid-download and mid-upload, then back on the same port', async (t) => {
  // Its own server: stopping it must not disturb the other tests of this file.
  const own = await startSshd(t)
  const { url } = await startTestServer(t, { connections: [{ label: 'sftp', type: 'sftp', hostname: '127.0.0.1', port: own.port }] })
  const { name, abs } = folder(own)
  const res0 = await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'sftp', username: own.username, password: own.password, path: name }) })
  const j0 = (await res0.json()) as { result?: { authorization: string } }
  if (!j0.result) throw new Error(`session failed: ${JSON.stringify(j0)}\n${own.output()}`)
  const token = j0.result.authorization
  const call = api(url, token)

  // A big (sparse) file, read slowly: the server goes away while it streams.
  const size = 512 * MiB
  writeFileSync(join(abs, 'big.bin'), '')
  truncateSync(join(abs, 'big.bin'), size)
  chownSync(join(abs, 'big.bin'), own.uid, own.gid)
  const res = await call('GET', '/api/files/cat', { path: '/big.bin' })
  t.equal(res.status, 200, 'the download starts')
  t.equal(res.headers.get('content-length'), String(size))
  const reader = res.body!.getReader()
  const first = (await reader.read()).value?.length ?? 0
  await own.stop()
  const { cut, bytes: got } = await readToEnd(reader, first)
  t.ok(cut, `the download is cut (${got} of ${size} bytes), not ended as if complete`)
  t.ok(got < size, 'short of the whole file')

  // An upload whose body keeps coming while the server goes away.
  await own.start()
  const body = bodyStoppingServer(() => own.stop(), 16 * MiB)
  const up = await call('POST', '/api/files/cat', { path: '/upload.bin' }, { body, duplex: 'half' } as RequestInit).then(
    async (r) => ({ status: r.status, json: (await r.json().catch(() => null)) as { code?: string } | null }),
    () => null,
  )
  t.ok(up === null || up.status >= 500, `the upload fails: ${up === null ? 'connection cut' : `${up.status} ${up.json?.code}`}`)
  if (up !== null) t.equal(up.json?.code, 'BACKEND_UNREACHABLE', 'as BACKEND_UNREACHABLE')
  t.notOk(existsSync(join(abs, 'upload.bin')), 'no partial target file')

  // Back on the same port: the next requests work without restarting filegate.
  await own.start()
  const ls = await call('GET', '/api/files/ls', { path: '/' })
  t.equal(ls.status, 200, 'ls after the restart')
  t.match(((await ls.json()) as { results: { name: string }[] }).results, [{ name: 'big.bin' }])
  const small = randomBytes(3 * MiB)
  let r = await call('POST', '/api/files/cat', { path: '/after.bin' }, { body: small })
  t.equal(r.status, 200, 'upload after the restart')
  await r.body?.cancel()
  r = await call('GET', '/api/files/cat', { path: '/after.bin' })
  t.equal(sha256(new Uint8Array(await r.arrayBuffer())), sha256(small), 'download after the restart')
  t.ok(await drain(await call('GET', '/api/files/cat', { path: '/big.bin' }, { headers: { range: 'bytes=0-1048575' } })) === MiB, 'a range of the big file')
})
