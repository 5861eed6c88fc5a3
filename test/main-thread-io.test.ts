/**
 * @module test/main-thread-io.test
 * The main thread does no file I/O while serving (its state store and logs aside): the
 * built filegate runs as a child with test/helpers/main-thread-fs.ts preloaded (as JavaScript), which
 * records the main thread's node:fs calls (and FileHandle's, and the file streams'), and
 * every door serves a workload of real clients in turn: HTTP (fetch: the web page, the admin console, the OpenAPI document, upload, download,
 * ls, zip, a tus upload), SFTP (OpenSSH sftp: put, get, ls), S3 (aws CLI: put, get, list,
 * a multipart upload), MCP (the SDK's client: tools listed, write, cat, ls). Counting starts
 * once filegate serves and its users are made, and stops when the door's workload is
 * done; a call that is not in STILL_ON_MAIN_THREAD fails the test, named by its module
 * and line.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import ts from 'typescript'
import { awsCli } from './helpers/aws-cli.js'
import { api } from './helpers/filegate.js'
import type { CountReply, CountRequest, FsCall } from './helpers/main-thread-fs.js'
import { ADMIN_PASSWORD, adminToken } from './helpers/share.js'
import { connect } from './gateways/mcp/client.js'
import { type Login, sftpBatch } from './gateways/sftp/clients.js'
import { serverDir } from './servers/process.js'
import { userFolder } from './servers/users.js'
import { startVsftpd } from './servers/vsftpd.js'

type Door = 'http' | 'sftp' | 's3' | 'mcp'

/**
 * The main thread's file I/O that is still there while a door serves, by door and by the
 * module that does it (the first project frame of the call's stack), each with the
 * issue-26 work that takes it off the main thread. The goal is an empty list: remove an
 * entry when that work is merged (the test says which entries it no longer saw).
 */
const STILL_ON_MAIN_THREAD: readonly { readonly door: Door; readonly module: string; readonly why: string }[] = [
  // SFTP: a write that is not a put, on a storage that cannot write at an offset, goes through a staging copy.
  { door: 'sftp', module: 'gateways/connection/staging.ts', why: 'issue 26, lane "handles": the staging copy moves with the file handles into the worker (workers/handles/)' },
]

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const PRELOAD = fileURLToPath(new URL('./helpers/main-thread-fs.ts', import.meta.url))
const MiB = 1024 * 1024

t.setTimeout(600_000)

interface Child {
  readonly proc: ChildProcess
  readonly url: string
  readonly sftpPort: number
  readonly s3Port: number
  count<T>(work: () => Promise<T>): Promise<readonly FsCall[]>
  /** How many of two fs calls the recorder saw, made through named imports in the child. */
  probe(): Promise<number>
}

/** The built filegate with the recorder preloaded, its HTTP API, SFTP and S3 gateways on free ports. */
async function startChild(t: Test, dir: string, disk: string, ftp: Record<string, unknown>): Promise<Child> {
  const config = join(dir, 'config.json')
  writeFileSync(
    config,
    JSON.stringify({
      port: 0,
      host: '127.0.0.1',
      workers: 2,
      data_dir: join(dir, 'data'),
      admin_password: ADMIN_PASSWORD,
      shutdown_grace_seconds: 1,
      sftp: { port: 0 },
      s3: { port: 0 },
      connections: [{ label: 'disk', type: 'local', path: disk, public: true }, { label: 'ftp', ...ftp }],
    }),
  )
  // Plain JavaScript: the worker threads load it too (they inherit the flags), without tsx.
  const preload = join(dir, 'main-thread-fs.mjs')
  const source = ts.transpileModule(readFileSync(PRELOAD, 'utf8'), { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } })
  writeFileSync(preload, source.outputText)
  const proc = spawn(process.execPath, ['--enable-source-maps', '--import', preload, join(ROOT, 'dist', 'front', 'main.js'), '--config', config], {
    cwd: ROOT,
    env: { ...process.env, FILEGATE_LOG_REQUESTS: 'false' },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  })
  t.teardown(() => {
    if (proc.exitCode === null) proc.kill('SIGKILL')
  })
  let out = ''
  const seen = await new Promise<{ url: string; sftp: number; s3: number }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`filegate did not start: ${out}`)), 120_000)
    proc.stdout!.on('data', (c: Buffer) => {
      out += c.toString()
      const url = /"msg":"filegate listening".*?"url":"(http:[^"]+)"/.exec(out)?.[1]
      const sftp = /"msg":"sftp gateway listening".*?"address":"[^"]*:(\d+)"/.exec(out)?.[1]
      const s3 = /"msg":"s3 gateway listening".*?"address":"[^"]*:(\d+)"/.exec(out)?.[1]
      if (url && sftp && s3) {
        clearTimeout(timer)
        resolve({ url, sftp: Number(sftp), s3: Number(s3) })
      }
    })
    proc.once('exit', (code) => reject(new Error(`filegate exited (${code}) before listening: ${out}`)))
  })
  const ask = (m: CountRequest, want: CountReply['type']) =>
    new Promise<CountReply>((resolve) => {
      const on = (r: CountReply) => {
        if (r.type !== want) return
        proc.off('message', on)
        resolve(r)
      }
      proc.on('message', on)
      proc.send(m)
    })
  return {
    proc,
    url: seen.url,
    sftpPort: seen.sftp,
    s3Port: seen.s3,
    async probe() {
      const r = await ask('main-thread-fs:probe', 'main-thread-fs:probed')
      return r.type === 'main-thread-fs:probed' ? r.seen : 0
    },
    async count(work) {
      await ask('main-thread-fs:start', 'main-thread-fs:started')
      try {
        await work()
      } finally {
        // (A failed workload still reports what it made the main thread do.)
      }
      const r = await ask('main-thread-fs:stop', 'main-thread-fs:calls')
      return r.type === 'main-thread-fs:calls' ? r.calls : []
    },
  }
}

/** Fails on each call the allow-list does not name for `door`, with its module, line and stack. */
function judge(t: Test, door: Door, calls: readonly FsCall[]): void {
  const allowed = STILL_ON_MAIN_THREAD.filter((a) => a.door === door)
  const byPlace = new Map<string, { n: number; call: FsCall }>()
  for (const c of calls) {
    const key = `${c.frame} ${c.fn}`
    const seen = byPlace.get(key)
    if (seen) seen.n++
    else byPlace.set(key, { n: 1, call: c })
  }
  const used = new Set<string>()
  const refused: string[] = []
  for (const [key, { n, call }] of byPlace) {
    const module = call.frame.replace(/:\d+$/, '')
    const allow = allowed.find((a) => a.module === module)
    if (allow) {
      used.add(allow.module)
      t.comment(`${door}: allowed for now (${allow.why}): ${key} ×${n}`)
    } else refused.push(`${key} ×${n}\n      ${call.stack.join('\n      ')}`)
  }
  t.same(refused, [], `${door}: no file I/O on the main thread while serving`)
  for (const a of allowed) if (!used.has(a.module)) t.comment(`${door}: ${a.module} did no main-thread file I/O: remove its entry from STILL_ON_MAIN_THREAD`)
}

const top = serverDir(t, 'main-io')
const disk = join(top, 'disk')
const local = join(top, 'client')
mkdirSync(disk)
mkdirSync(local)
// A storage that cannot write at an offset (FTP): SFTP writes that are not a put go through a staging copy there.
const ftpd = await startVsftpd(t)
const ftpFolder = userFolder(ftpd)
const gate = await startChild(t, top, disk, { type: 'ftp', hostname: '127.0.0.1', port: ftpd.port, username: ftpd.username, password: ftpd.password })

const admin = api(gate.url, await adminToken(gate.url))
const password = `alice-${randomBytes(6).toString('hex')}`
const made = await admin('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'alice', password, connection: 'disk', root: '/' }) })
if (made.status !== 200) throw new Error(`adding a user: ${made.status} ${await made.text()}`)
const bob = await admin('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'bob', password, connection: 'ftp', root: `/${ftpFolder}` }) })
if (bob.status !== 200) throw new Error(`adding a user: ${bob.status} ${await bob.text()}`)
const keyRes = await admin('POST', '/admin/api/users/alice/s3-keys')
if (keyRes.status !== 201) throw new Error(`making an S3 key: ${keyRes.status} ${await keyRes.text()}`)
const key = ((await keyRes.json()) as { result: { access_key_id: string; secret_access_key: string } }).result
const sessionRes = await fetch(`${gate.url}/api/session`, { method: 'POST', body: JSON.stringify({ label: 'disk' }) })
const token = ((await sessionRes.json()) as { result: { authorization: string } }).result.authorization
const call = api(gate.url, token)

const small = randomBytes(64 * 1024)
const big = randomBytes(20 * MiB) // the aws CLI sends it as a multipart upload (8 MiB parts)
writeFileSync(join(local, 'small.bin'), small)
writeFileSync(join(local, 'big.bin'), big)

await t.test('the recorder sees the child\'s calls, through named imports too', async (t) => {
  t.equal(await gate.probe(), 2, 'a statSync and a promises.stat, both recorded')
})

await t.test('HTTP: the web page, the admin console, the OpenAPI document, upload, download, ls, zip, a tus upload', async (t) => {
  const calls = await gate.count(async () => {
    const page = await fetch(`${gate.url}/`)
    t.match(await page.text(), /<html/i, 'the web file manager\'s page')
    const css = await fetch(`${gate.url}/web/app.css`)
    t.equal(css.status, 200, 'one of its files')
    await css.arrayBuffer()
    for (const path of ['/admin', '/admin/console.js', '/api/openapi.json']) {
      const res = await fetch(`${gate.url}${path}`)
      t.equal(res.status, 200, path)
      await res.arrayBuffer()
    }
    t.equal((await call('POST', '/api/files/cat', { path: '/web/up.bin' }, { body: small })).status, 200, 'uploaded')
    const back = await call('GET', '/api/files/cat', { path: '/web/up.bin' })
    t.same(Buffer.from(await back.arrayBuffer()), small, 'downloaded')
    const ls = (await (await call('GET', '/api/files/ls', { path: '/web' })).json()) as { results: { name: string }[] }
    t.same(ls.results.map((e) => e.name), ['up.bin'], 'listed')
    const zip = await call('GET', '/api/files/zip', { path: '/web/' })
    t.equal(zip.status, 200, 'zipped')
    t.ok((await zip.arrayBuffer()).byteLength > small.byteLength, 'a zip of the folder')
    const TUS = { 'tus-resumable': '1.0.0', authorization: `Bearer ${token}` }
    const created = await fetch(`${gate.url}/api/files/tus?path=/web/tus.bin`, { method: 'POST', headers: { ...TUS, 'upload-length': String(small.byteLength) } })
    t.equal(created.status, 201, 'a tus upload made')
    const at = new URL(created.headers.get('location')!, gate.url).href
    const half = small.byteLength / 2
    for (const off of [0, half]) {
      const res = await fetch(at, { method: 'PATCH', headers: { ...TUS, 'upload-offset': String(off), 'content-type': 'application/offset+octet-stream' }, body: small.subarray(off, off + half) })
      t.equal(res.status, 204, `tus PATCH at ${off}`)
    }
  })
  t.same(readFileSync(join(disk, 'web', 'tus.bin')), small, 'the tus upload landed whole')
  judge(t, 'http', calls)
})

await t.test('SFTP: OpenSSH sftp put, get, ls; a resumed upload to FTP (a staging copy)', async (t) => {
  const login: Login = { port: gate.sftpPort, user: 'alice', password }
  const calls = await gate.count(async () => {
    const ran = await sftpBatch(t, login, `mkdir /ssh\nput ${join(local, 'big.bin')} /ssh/big.bin\nget /ssh/big.bin ${join(local, 'big-back.bin')}\nls -l /ssh\n`)
    t.equal(ran.code, 0, `sftp ran (${ran.stderr.trim()})`)
    t.match(ran.stdout, /big\.bin/, 'listed')
    // reput opens the file without truncating it and writes from its size on.
    const resumed = await sftpBatch(t, { ...login, user: 'bob' }, `put ${join(local, 'small.bin')} /r.bin\nreput ${join(local, 'big.bin')} /r.bin\n`)
    t.equal(resumed.code, 0, `sftp reput ran (${resumed.stderr.trim()})`)
  })
  t.same(readFileSync(join(disk, 'ssh', 'big.bin')), big, 'put landed whole')
  t.same(readFileSync(join(local, 'big-back.bin')), big, 'got it back whole')
  t.same(readFileSync(join(ftpd.root, ftpFolder, 'r.bin')), Buffer.concat([small, big.subarray(small.byteLength)]), 'the resumed upload landed whole on the FTP storage')
  judge(t, 'sftp', calls)
})

await t.test('S3: aws CLI put, get, list, a multipart upload', async (t) => {
  const login = { endpoint: `http://127.0.0.1:${gate.s3Port}`, accessKeyId: key.access_key_id, secretAccessKey: key.secret_access_key }
  const aws = async (args: readonly string[]) => {
    const r = await awsCli(login, local, args)
    t.equal(r.code, 0, `aws ${args.join(' ')} (${r.stderr.trim()})`)
    return r
  }
  const calls = await gate.count(async () => {
    await aws(['s3', 'mb', 's3://bucket'])
    await aws(['s3', 'cp', join(local, 'small.bin'), 's3://bucket/small.bin'])
    await aws(['s3', 'cp', join(local, 'big.bin'), 's3://bucket/big.bin'])
    await aws(['s3', 'cp', 's3://bucket/small.bin', join(local, 'small-back.bin')])
    t.match((await aws(['s3', 'ls', 's3://bucket/'])).stdout, /big\.bin[\s\S]*small\.bin|small\.bin[\s\S]*big\.bin/, 'listed')
  })
  t.same(readFileSync(join(disk, 'bucket', 'big.bin')), big, 'the multipart upload landed whole')
  t.same(readFileSync(join(local, 'small-back.bin')), small, 'got it back whole')
  judge(t, 's3', calls)
})

await t.test('MCP: the SDK client lists tools, writes, reads, lists', async (t) => {
  const calls = await gate.count(async () => {
    const mcp = await connect(t, gate.url, token, 'streamable')
    const tools = (await mcp.client.listTools()).tools.map((x) => x.name)
    t.ok(tools.includes('write') && tools.includes('cat'), 'tools listed')
    t.equal(await mcp.text('mkdir', { path: '/mcp' }), 'made /mcp')
    t.equal(await mcp.text('write', { path: '/mcp/f.txt', content: 'hello\n' }), 'wrote 6 bytes to /mcp/f.txt')
    t.equal(await mcp.text('cat', { path: '/mcp/f.txt' }), 'hello\n')
    t.match((await mcp.call('ls', { path: '/mcp' })).structuredContent, { entries: [{ name: 'f.txt' }] })
    await mcp.client.close()
  })
  judge(t, 'mcp', calls)
})
