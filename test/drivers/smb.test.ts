/**
 * @module test/drivers/smb.test
 * The conformance suite against the smb driver and a real Samba smbd with its
 * default authentication settings (NTLMv2 only), on 127.0.0.1 and a free port:
 * every test gets a fresh, empty folder of the share as its root. Then the login
 * answers and what the session pool does when the server goes away and comes back.
 */
import { createHash, randomBytes } from 'node:crypto'
import { chownSync, mkdirSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { createSmbDriver } from '../../workers/drivers/smb/index.js'
import { api, startTestServer } from '../helpers/filegate.js'
import { freePort } from '../servers/process.js'
import { startSamba } from '../servers/samba.js'
import { ctx, runDriverSuite } from './suite.js'

/**
 * A refusal is answered on the refusal itself, not after a backend timeout or a retry
 * loop: the error's code already tells a refusal from a timeout, and this bound (the
 * default backend timeout, 20 s) only catches an answer held that long. Not tighter: a
 * busy machine takes seconds over a fresh server's first login.
 */
const QUICK_MS = 20_000

t.setTimeout(300_000)

const smb = await startSamba(t)
const spec = { hostname: smb.hostname, port: smb.port, share: smb.share, domain: smb.domain, username: smb.username, password: smb.password }

/** A fresh folder of the share, owned by the share's user. */
function folder(): string {
  const name = `f-${randomBytes(6).toString('hex')}`
  const abs = join(smb.dir, name)
  mkdirSync(abs)
  const st = statSync(smb.dir)
  chownSync(abs, st.uid, st.gid)
  return name
}

await runDriverSuite(t, {
  name: 'smb',
  makeDriver: async () => createSmbDriver({ ...spec, root: folder() }),
  skip: [
    {
      reason: 'SMB forbids the characters \\ / : * ? " < > | in names (the driver refuses them: refusedNameChars)',
      tests: ['name ‹hello? sausage›', 'name ‹" \' @ < > & ? + ≠›', 'hostile nested path', 'name ‹back\\slash.txt›', 'name ‹\\leading backslash›'],
    },
    {
      reason: 'Windows names cannot end with a space: Samba stores the file but lists it under a mangled 8.3 name',
      tests: ['name ‹trailing space ›'],
    },
  ],
})

t.test('login answers: never a crash, never a hang', async (t) => {
  const errorOf = async (over: Record<string, unknown>) => {
    const d = await createSmbDriver({ ...spec, root: '', ...over })
    t.teardown(() => d.close())
    const started = Date.now()
    const err = await d.stat(ctx(), '/').then(() => null, (e: { code?: string; message?: string }) => e)
    return { code: err?.code, message: err?.message, ms: Date.now() - started }
  }
  let r = await errorOf({ password: 'wrong' })
  t.equal(r.code, 'EAUTH', `wrong password → EAUTH (${r.message})`)
  t.ok(r.ms < QUICK_MS, `answered in ${r.ms} ms`)
  r = await errorOf({ username: 'nobody-here' })
  t.equal(r.code, 'EAUTH', `unknown user → EAUTH (${r.message})`)
  r = await errorOf({ share: 'no-such-share' })
  t.equal(r.code, 'ENOENT', `unknown share → ENOENT (${r.message})`)
  r = await errorOf({ port: await freePort() })
  t.equal(r.code, 'EUNAVAILABLE', `nothing listening → EUNAVAILABLE (${r.message})`)
  t.ok(r.ms < QUICK_MS, `answered in ${r.ms} ms`)
  r = await errorOf({ root: 'no/such/folder' })
  t.equal(r.code, 'ENOENT', `a root folder that does not exist → ENOENT (${r.message})`)
})

t.test('a Samba that requires signing is refused with a clear error', async (t) => {
  const strict = await startSamba(t, { extraGlobal: { 'server signing': 'mandatory' } })
  const d = await createSmbDriver({ hostname: strict.hostname, port: strict.port, share: strict.share, domain: strict.domain, username: strict.username, password: strict.password, root: '' })
  t.teardown(() => d.close())
  await t.rejects(d.stat(ctx(), '/'), { code: 'ENOTSUP', message: /signing/ })
})

t.test('a share that requires encryption is refused with a clear error', async (t) => {
  const strict = await startSamba(t, { extraGlobal: { 'smb encrypt': 'required' } })
  const d = await createSmbDriver({ hostname: strict.hostname, port: strict.port, share: strict.share, domain: strict.domain, username: strict.username, password: strict.password, root: '' })
  t.teardown(() => d.close())
  await t.rejects(d.stat(ctx(), '/'), { code: 'EACCES', message: /encryption/ })
})

t.test('unknown users turned into guests (map to guest = bad user) are refused', async (t) => {
  const lax = await startSamba(t, { extraGlobal: { 'map to guest': 'bad user' } })
  const d = await createSmbDriver({ hostname: lax.hostname, port: lax.port, share: lax.share, domain: lax.domain, username: 'nobody-here', password: 'x', root: '' })
  t.teardown(() => d.close())
  await t.rejects(d.stat(ctx(), '/'), { code: 'EAUTH', message: /guest/ })
})

t.test('a Samba that allows only SMB3 is refused with a clear error', async (t) => {
  const strict = await startSamba(t, { extraGlobal: { 'server min protocol': 'SMB3' } })
  const d = await createSmbDriver({ hostname: strict.hostname, port: strict.port, share: strict.share, domain: strict.domain, username: strict.username, password: strict.password, root: '' })
  t.teardown(() => d.close())
  await t.rejects(d.stat(ctx(), '/'), { code: 'ENOTSUP', message: /SMB 3/ })
})

t.test('the server stopped mid-read and mid-write, then back: sessions are replaced', async (t) => {
  const own = await startSamba(t)
  const d = await createSmbDriver({ hostname: own.hostname, port: own.port, share: own.share, domain: own.domain, username: own.username, password: own.password, root: '', timeoutMs: 5000 })
  t.teardown(() => d.close())
  const MiB = 1024 * 1024
  const data = randomBytes(64 * MiB)
  await d.write(ctx(), '/big.bin', (async function* () {
    for (let i = 0; i < data.length; i += MiB) yield data.subarray(i, i + MiB)
  })())
  const it = d.read(ctx(), '/big.bin')[Symbol.asyncIterator]()
  await it.next()
  await own.stop()
  const readErr = await (async () => {
    for (;;) if ((await it.next()).done) return null
  })().catch((e: { code?: string }) => e)
  t.match(readErr, { code: 'EUNAVAILABLE' }, 'the read fails with EUNAVAILABLE')

  await own.restart()
  let stopped = false
  const body = (async function* () {
    for (let i = 0; i < 256; i++) {
      if (i === 16 && !stopped) {
        stopped = true
        await own.stop()
      }
      yield randomBytes(MiB)
    }
  })()
  await t.rejects(d.write(ctx(), '/upload.bin', body), { code: 'EUNAVAILABLE' }, 'the write fails with EUNAVAILABLE')
  await own.restart()
  await t.rejects(d.stat(ctx(), '/upload.bin'), { code: 'ENOENT' }, 'no target file')
  const e = await d.stat(ctx(), '/big.bin')
  t.equal(e.size, data.length, 'the next request works on a new session')
  // The temporary file the failed write could not delete goes once the server answers again.
  const deadline = Date.now() + 10_000
  while (readdirSync(own.dir).length > 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
  t.same(readdirSync(own.dir).sort(), ['big.bin'], 'no temporary file left')
})

t.test('over HTTP: login answers 401 for a wrong password, 502 when nothing listens; files go through', async (t) => {
  const gate = async (port: number) =>
    (await startTestServer(t, { connections: [{ label: 'smb', type: 'smb', hostname: '127.0.0.1', port, share: smb.share }] })).url
  const login = (url: string, body: Record<string, unknown>) =>
    fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'smb', username: smb.username, password: smb.password, ...body }) })
  const url = await gate(smb.port)
  let started = Date.now()
  let res = await login(url, { password: 'wrong' })
  t.equal(res.status, 401, `wrong password: 401 in ${Date.now() - started} ms`)
  t.match(await res.json(), { status: 'error', code: 'NOT_AUTHENTICATED' })
  res = await login(url, { username: 'nobody-here' })
  t.equal(res.status, 401, 'unknown user: 401')
  await res.body?.cancel()
  started = Date.now()
  res = await login(await gate(await freePort()), {})
  t.equal(res.status, 502, `nothing listening: 502 in ${Date.now() - started} ms`)
  t.match(await res.json(), { status: 'error', code: 'BACKEND_UNREACHABLE' })

  const root = folder()
  res = await login(url, { path: root })
  t.equal(res.status, 200, 'the right password: a session')
  const call = api(url, ((await res.json()) as { result: { authorization: string } }).result.authorization)
  const data = randomBytes(9 * 1024 * 1024 + 7)
  const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex')
  res = await call('POST', '/api/files/cat', { path: '/docs/a.bin' }, { body: data })
  t.equal(res.status, 200, 'upload (parents created)')
  await res.body?.cancel()
  res = await call('GET', '/api/files/cat', { path: '/docs/a.bin' })
  t.equal(sha(new Uint8Array(await res.arrayBuffer())), sha(data), 'download: the same bytes')
  res = await call('POST', '/api/files/mv', { from: '/docs/', to: '/moved/' })
  t.equal(res.status, 200, 'mv a folder')
  await res.body?.cancel()
  res = await call('GET', '/api/files/ls', { path: '/moved/' })
  t.match(((await res.json()) as { results: unknown[] }).results, [{ name: 'a.bin', type: 'file', size: data.length }])
  res = await call('POST', '/api/files/rm', { path: '/moved/' })
  t.equal(res.status, 200, 'rm a tree')
  await res.body?.cancel()
  t.same(readdirSync(join(smb.dir, root)), [], 'nothing left on the share')
})
