/**
 * The SFTP gateway with ssh2's own client: the root can never be left, a connection
 * cut mid-upload commits nothing, the handle cap, and the connection's limits (login
 * attempts, login grace time).
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { validateConfig } from '../../../core/config.js'
import { startFilegate } from '../../../front/app.js'
import { silentLogger } from '../../../front/log.js'
import { createSftpGateway } from '../../../gateways/sftp/index.js'
import { MAX_SESSIONS } from '../../../gateways/sftp/connection.js'
import { MAX_HANDLES } from '../../../gateways/sftp/limits.js'
import type { SFTPWrapper } from 'ssh2'
import { call, sftpBatch, sshExec, ssh2Sftp } from './clients.js'
import { BACKENDS, startGateway } from './fixture.js'
import { serverDir } from '../../servers/process.js'

const STATUS = { NO_SUCH_FILE: 2, PERMISSION_DENIED: 3, FAILURE: 4, OP_UNSUPPORTED: 8 }

/** The SFTP status code an ssh2 call failed with. */
async function statusOf(p: Promise<unknown>): Promise<number | 'ok'> {
  try {
    await p
    return 'ok'
  } catch (err) {
    return (err as { code: number }).code
  }
}

/** The gateway layer's private staging copies (docs/gateways.md). */
const staged = (dataDir: string): string[] => {
  const dir = join(dataDir, 'gateway-staging')
  return existsSync(dir) ? readdirSync(dir) : []
}

/** Waits until `check` holds (the server finishes asynchronously). */
async function until(check: () => boolean, ms = 15_000): Promise<boolean> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) return false
    await new Promise((r) => setTimeout(r, 50))
  }
  return true
}

t.test('the root can never be left: .., absolute paths, planted symbolic links', async (t) => {
  const { login, root } = await startGateway(t)
  const outside = serverDir(t, 'outside')
  writeFileSync(join(outside, 'secret.txt'), 'secret')
  mkdirSync(join(root, 'd'))
  writeFileSync(join(root, 'd', 'in.txt'), 'in')
  symlinkSync(outside, join(root, 'link-dir'))
  symlinkSync(join(outside, 'secret.txt'), join(root, 'link-file'))
  const { sftp } = await ssh2Sftp(t, login)

  t.same(await call(sftp.realpath.bind(sftp), '../../..'), '/', 'REALPATH of ../../.. is the root')
  t.same(((await call(sftp.readdir.bind(sftp), '/../..')) as { filename: string }[]).map((e) => e.filename).sort(), ['d'], '/../.. lists the root (links leading outside are not listed)')
  t.equal(await statusOf(call(sftp.stat.bind(sftp), `/../../..${outside}/secret.txt`)), STATUS.NO_SUCH_FILE, 'an absolute path outside is a path inside the root')
  t.equal(await statusOf(call(sftp.stat.bind(sftp), 'd/../../etc/passwd')), STATUS.NO_SUCH_FILE, 'climbing with ..')
  for (const [what, p] of [
    ['STAT through a linked directory', () => call(sftp.stat.bind(sftp), 'link-dir/secret.txt')],
    ['STAT of a linked file', () => call(sftp.stat.bind(sftp), 'link-file')],
    ['OPENDIR of a linked directory', () => call(sftp.readdir.bind(sftp), 'link-dir')],
    ['OPEN for reading', () => call(sftp.open.bind(sftp), 'link-file', 'r')],
    ['OPEN for writing through a link', () => call(sftp.open.bind(sftp), 'link-dir/new.txt', 'w')],
    ['MKDIR through a link', () => call(sftp.mkdir.bind(sftp), 'link-dir/sub')],
    ['REMOVE through a link', () => call(sftp.unlink.bind(sftp), 'link-dir/secret.txt')],
    ['RENAME out through a link', () => call(sftp.rename.bind(sftp), 'd/in.txt', 'link-dir/in.txt')],
    ['SETSTAT through a link', () => call(sftp.chmod.bind(sftp), 'link-file', 0o777)],
  ] as const) {
    const code = await statusOf(p())
    t.ok(code === STATUS.PERMISSION_DENIED || code === STATUS.NO_SUCH_FILE, `${what}: refused (${code})`)
  }
  t.equal(await statusOf(call(sftp.readlink.bind(sftp), 'link-file')), STATUS.OP_UNSUPPORTED, 'READLINK: unsupported')
  t.equal(await statusOf(call(sftp.symlink.bind(sftp), '/etc', 'mine')), STATUS.OP_UNSUPPORTED, 'SYMLINK: unsupported')
  t.equal(await statusOf(call(sftp.stat.bind(sftp), '..\\..\\etc\\passwd')), STATUS.NO_SUCH_FILE, 'a backslash is a character of a name, never a separator')
  t.equal(await statusOf(call(sftp.mkdir.bind(sftp), 'bad\u0001name')), STATUS.FAILURE, 'a control character is refused')
  t.same(readdirSync(outside), ['secret.txt'], 'nothing changed outside')
  t.equal(readFileSync(join(outside, 'secret.txt'), 'utf8'), 'secret', 'the outside file is untouched')
  t.same(readdirSync(join(root, 'd')), ['in.txt'], 'nothing moved')
})

for (const backend of BACKENDS) {
  t.test(`${backend}: a connection cut mid-upload commits nothing and leaves no debris`, async (t) => {
    const { login, root, put, dataDir } = await startGateway(t, { backend })
    put('old.bin', 'the old content')
    const before = readdirSync(root).sort()
    const { client, sftp } = await ssh2Sftp(t, login)
    for (const name of ['old.bin', 'new.bin']) {
      const h = await call<Buffer>(sftp.open.bind(sftp), name, 'w')
      const chunk = randomBytes(32 * 1024)
      for (let i = 0; i < 16; i++) await call(sftp.write.bind(sftp), h, chunk, 0, chunk.length, i * chunk.length)
    }
    // No CLOSE: the network goes away.
    ;(client as unknown as { _sock: { destroy(): void } })._sock.destroy()
    t.ok(await until(() => readdirSync(root).sort().join() === before.join()), `no debris: ${readdirSync(root).join(', ')}`)
    t.ok(await until(() => staged(dataDir).length === 0), 'no staging copy left')
    t.equal(readFileSync(join(root, 'old.bin'), 'utf8'), 'the old content', 'the old file is whole and unchanged')
    t.notOk(existsSync(join(root, 'new.bin')), 'the new file was never committed')
  })

  t.test(`${backend}: an OpenSSH sftp killed mid-put commits nothing`, async (t) => {
    const { login, root, put, dataDir } = await startGateway(t, { backend })
    const local = serverDir(t, 'big')
    writeFileSync(join(local, 'big.bin'), randomBytes(64 * 1024 * 1024))
    put('big.bin', 'old')
    const run = sftpBatch(t, login, `put ${join(local, 'big.bin')} big.bin\n`, ['-o', 'Ciphers=aes128-ctr', '-l', '20000'])
    await new Promise((r) => setTimeout(r, 1500))
    run.child.kill('SIGKILL')
    await run
    t.ok(await until(() => readdirSync(root).join() === 'big.bin'), `no debris: ${readdirSync(root).join(', ')}`)
    t.ok(await until(() => staged(dataDir).length === 0), 'no staging copy left')
    t.ok(await until(() => readFileSync(join(root, 'big.bin'), 'utf8') === 'old'), 'the old file is unchanged')
  })
}

t.test('s3: an append cut before CLOSE goes through a staging copy and commits nothing', async (t) => {
  const { login, dataDir } = await startGateway(t, { backend: 's3' })
  const first = await ssh2Sftp(t, login)
  await call(first.sftp.writeFile.bind(first.sftp), 'log.txt', 'line 1\n')
  const h = await call<Buffer>(first.sftp.open.bind(first.sftp), 'log.txt', 'a')
  const more = Buffer.from('line 2\n'.repeat(10_000))
  await call(first.sftp.write.bind(first.sftp), h, more, 0, more.length, 7)
  t.equal(staged(dataDir).length, 1, 'a staging copy while the file is open (S3 cannot write in place)')
  ;(first.client as unknown as { _sock: { destroy(): void } })._sock.destroy()
  t.ok(await until(() => staged(dataDir).length === 0), 'the staging copy is removed')
  const { sftp } = await ssh2Sftp(t, login)
  t.equal(String(await call<Buffer>(sftp.readFile.bind(sftp), 'log.txt')), 'line 1\n', 'the object is as it was')
  t.same(((await call(sftp.readdir.bind(sftp), '/')) as { filename: string }[]).map((e) => e.filename), ['log.txt'], 'no debris')
})

t.test(`a session holds at most ${MAX_HANDLES} handles`, async (t) => {
  const { login, root } = await startGateway(t)
  writeFileSync(join(root, 'f.txt'), 'f')
  const { sftp } = await ssh2Sftp(t, login)
  const handles: Buffer[] = []
  for (let i = 0; i < MAX_HANDLES; i++) handles.push(await call<Buffer>(sftp.open.bind(sftp), 'f.txt', 'r'))
  t.equal(new Set(handles.map((h) => h.toString('hex'))).size, MAX_HANDLES, 'distinct handles')
  const over = call(sftp.open.bind(sftp), 'f.txt', 'r')
  await t.rejects(over, { code: STATUS.FAILURE, message: /too many open handles/ }, 'one more is refused')
  await call(sftp.close.bind(sftp), handles.pop())
  t.ok(await call(sftp.open.bind(sftp), 'f.txt', 'r'), 'closing one frees a place')
  await t.rejects(call(sftp.close.bind(sftp), handles[0]!.map((b) => b ^ 0xff)), { code: STATUS.FAILURE }, 'an unknown handle is refused')
})

t.test(`a connection holds at most ${MAX_SESSIONS} sessions at once`, async (t) => {
  const { login } = await startGateway(t)
  const { client } = await ssh2Sftp(t, login)
  const open = () => new Promise<SFTPWrapper>((resolve, reject) => client.sftp((err, s) => (err ? reject(err) : resolve(s))))
  const more: SFTPWrapper[] = []
  for (let i = 1; i < MAX_SESSIONS; i++) more.push(await open())
  await t.rejects(open(), 'one more is refused')
  more.pop()!.end()
  // The close reaches the server asynchronously: retry until it has.
  let reopened = false
  for (const deadline = Date.now() + 15_000; !reopened && Date.now() < deadline; ) reopened = await open().then(() => true, () => false)
  t.ok(reopened, 'closing one frees a place')
})

t.test('a connection gets 6 login attempts, then it is closed', async (t) => {
  const lines: { msg: string; reason?: string }[] = []
  const logger = { log: (_l: string, msg: string, fields?: Record<string, unknown>) => void lines.push({ msg, ...fields }) }
  const { login } = await startGateway(t, { logger })
  const r = await sshExec(t, { ...login, password: 'Xyzzy-not-her-password' }, 'true', ['-o', 'NumberOfPasswordPrompts=20'])
  t.not(r.code, 0, 'not logged in')
  t.equal(lines.filter((l) => l.msg === 'sftp login refused').length, 6, 'six refusals')
  t.ok(lines.some((l) => l.msg === 'sftp connection closed: too many failed logins'), 'then the connection is closed')
  t.notOk(JSON.stringify(lines).includes('Xyzzy'), 'the password is never logged')
})

t.test('a connection that does not log in in time is closed', async (t) => {
  const gateway = createSftpGateway({ port: 0, host: '127.0.0.1', loginGraceMs: 300 })
  const app = await startFilegate(validateConfig({ port: 0, workers: 1, data_dir: serverDir(t, 'grace'), sftp: { port: 'off' }, s3: { port: 'off' } }), { logger: silentLogger, gateways: [gateway] })
  t.teardown(() => app.close(0))
  const sock = connect(gateway.port!, '127.0.0.1')
  sock.on('data', () => {})
  const closed = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 15_000)
    sock.once('close', () => {
      clearTimeout(timer)
      resolve(true)
    })
  })
  t.ok(closed, 'closed by the server')
})

for (const backend of BACKENDS) {
  t.test(`${backend}: ssh2 client: upload, download, listing, attributes`, async (t) => {
    const { login, root, put } = await startGateway(t, { backend })
    const local = serverDir(t, 'ssh2')
    const data = randomBytes(5 * 1024 * 1024 + 3)
    writeFileSync(join(local, 'up.bin'), data)
    const { sftp } = await ssh2Sftp(t, login)
    await call(sftp.fastPut.bind(sftp), join(local, 'up.bin'), 'up.bin')
    t.same(readFileSync(join(root, 'up.bin')), data, 'fastPut')
    await call(sftp.fastGet.bind(sftp), 'up.bin', join(local, 'down.bin'))
    t.same(readFileSync(join(local, 'down.bin')), data, 'fastGet')
    const st = await call<{ size: number; isFile(): boolean; mtime: number }>(sftp.stat.bind(sftp), 'up.bin')
    t.equal(st.size, data.length, 'STAT size')
    t.ok(st.isFile(), 'a file')
    t.ok(Math.abs(st.mtime * 1000 - Date.now()) < 120_000, 'a recent mtime')
    await call(sftp.utimes.bind(sftp), 'up.bin', 1_000_000_000, 1_200_000_000)
    t.equal((await call<{ mtime: number }>(sftp.stat.bind(sftp), 'up.bin')).mtime, 1_200_000_000, 'SETSTAT times')
    await t.rejects(call(sftp.chown.bind(sftp), 'up.bin', 0, 0), { code: STATUS.OP_UNSUPPORTED, message: /owners/ }, 'owners cannot be changed: said, not ignored')
    const h = await call<Buffer>(sftp.open.bind(sftp), 'up.bin', 'r')
    t.equal((await call<{ size: number }>(sftp.fstat.bind(sftp), h)).size, data.length, 'FSTAT')
    await call(sftp.close.bind(sftp), h)
  })
}


t.test('s3: what the storage cannot keep is refused, never silently ignored', async (t) => {
  const { login } = await startGateway(t, { backend: 's3' })
  const { sftp } = await ssh2Sftp(t, login)
  const data = randomBytes(200_000)
  const h = await call<Buffer>(sftp.open.bind(sftp), 'f.bin', 'w')
  await call(sftp.write.bind(sftp), h, data, 0, data.length, 0)
  await call(sftp.close.bind(sftp), h)
  t.equal((await call<{ size: number }>(sftp.stat.bind(sftp), 'f.bin')).size, data.length, 'uploaded')
  await t.rejects(call(sftp.chmod.bind(sftp), 'f.bin', 0o600), { code: STATUS.OP_UNSUPPORTED, message: /permission/ }, 'chmod: unsupported, saying why')
  await t.rejects(call(sftp.utimes.bind(sftp), 'f.bin', 1_000_000_000, 1_000_000_000), { code: STATUS.OP_UNSUPPORTED, message: /times/ }, 'utimes: unsupported')
  await t.rejects(call(sftp.setstat.bind(sftp), 'f.bin', { size: 10, mode: 0o600 }), { code: STATUS.OP_UNSUPPORTED }, 'a request with one refused part')
  t.equal((await call<{ size: number }>(sftp.stat.bind(sftp), 'f.bin')).size, data.length, '... changes nothing (the size was not cut)')
  const back = await call<Buffer>(sftp.readFile.bind(sftp), 'f.bin')
  t.same(back, data, 'read back')
})

t.test('times SFTP v3 cannot carry are clamped, not a failed STAT', async (t) => {
  const { login, root, put } = await startGateway(t)
  put('old.txt', 'old')
  put('far.txt', 'far')
  execFileSync('touch', ['-d', '1960-01-01', join(root, 'old.txt')]) // node's utimes takes a negative time as now
  utimesSync(join(root, 'far.txt'), 2 ** 33, 2 ** 33)
  const { sftp } = await ssh2Sftp(t, login)
  t.equal((await call<{ mtime: number }>(sftp.stat.bind(sftp), 'old.txt')).mtime, 0, 'before 1970: 0')
  t.equal((await call<{ mtime: number }>(sftp.stat.bind(sftp), 'far.txt')).mtime, 0xffffffff, 'after 2106: the largest')
  t.equal(((await call(sftp.readdir.bind(sftp), '/')) as unknown[]).length, 2, 'listed')
})
