/**
 * @module test/drivers/sftp.test
 * The conformance suite against the sftp driver and a real OpenSSH sshd (started
 * here, on a free port, for a throwaway user), each test in a fresh folder of the
 * user's home. Then what only SFTP has: private-key login, the host key check, the
 * login folder as root, and sessions and uploads that survive a server restart.
 */
import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { type AddressInfo, createServer } from 'node:net'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { Driver, Entry } from '../../core/driver.js'
import { createSftpDriver, type SftpConfig } from '../../workers/drivers/sftp/index.js'
import { run } from '../servers/process.js'
import { startSshd } from '../servers/sshd.js'
import { ctx, runDriverSuite } from './suite.js'
import { userFolder } from '../servers/users.js'

/**
 * A refusal is answered on the refusal itself, not after a backend timeout or a retry
 * loop: the error's code already tells a refusal from a timeout, and this bound (the
 * default backend timeout, 20 s) only catches an answer held that long. Not tighter: a
 * busy machine takes seconds over a fresh server's first login.
 */
const QUICK_MS = 20_000

const sshd = await startSshd(t)
const base = { hostname: '127.0.0.1', port: sshd.port, username: sshd.username, password: sshd.password }

/** A fresh folder in the user's home, owned by the user. */
const folder = (): string => userFolder(sshd)

await runDriverSuite(t, {
  name: 'sftp',
  // A relative root: resolved against the login folder.
  makeDriver: async () => createSftpDriver({ ...base, root: folder() }),
})

/** A driver over a fresh folder (`dir`, its absolute path on this machine), closed at teardown. */
const open = async (t: Test, cfg: Partial<SftpConfig> = {}): Promise<Driver & { dir: string }> => {
  const root = folder()
  const d = await createSftpDriver({ ...base, root, ...cfg })
  t.teardown(() => d.close())
  return Object.assign(d, { dir: join(sshd.root, root) })
}

t.test('private key login', async (t) => {
  const { password: _password, ...noPassword } = base
  const d = await createSftpDriver({ ...noPassword, privateKey: sshd.privateKey, root: '' })
  t.teardown(() => d.close())
  t.match(await d.stat(ctx(), '/'), { kind: 'dir' })
})

t.test('private key with a passphrase: the right one logs in, a wrong one is EAUTH, a broken key EINVAL', async (t) => {
  const { password: _password, ...noPassword } = base
  const dir = t.testdir({ key: sshd.privateKey })
  chmodSync(join(dir, 'key'), 0o600)
  run('ssh-keygen', ['-q', '-p', '-P', '', '-N', 'secret phrase', '-f', join(dir, 'key')])
  const encrypted = readFileSync(join(dir, 'key'), 'utf8')
  const d = await createSftpDriver({ ...noPassword, privateKey: encrypted, passphrase: 'secret phrase', root: '' })
  t.teardown(() => d.close())
  t.match(await d.stat(ctx(), '/'), { kind: 'dir' })
  await t.rejects(createSftpDriver({ ...noPassword, privateKey: encrypted, passphrase: 'wrong', root: '' }), { code: 'EAUTH' })
  await t.rejects(createSftpDriver({ ...noPassword, privateKey: encrypted, root: '' }), { code: 'EAUTH' }, 'no passphrase')
  await t.rejects(createSftpDriver({ ...noPassword, privateKey: 'not a key', root: '' }), { code: 'EINVAL' })
})

t.test('a fingerprint with base64 padding matches too', async (t) => {
  const d = await open(t, { hostkey: `${sshd.hostkeyFingerprint}=` })
  t.match(await d.stat(ctx(), '/'), { kind: 'dir' })
})

t.test('empty root is the login folder; an absolute root works', async (t) => {
  writeFileSync(join(sshd.root, 'marker.txt'), 'here')
  const d = await open(t, { root: '' })
  t.match(await d.stat(ctx(), '/marker.txt'), { kind: 'file', size: 4 })
  const abs = await open(t, { root: sshd.root })
  t.match(await abs.stat(ctx(), '/marker.txt'), { kind: 'file', size: 4 })
})

t.test('a missing root folder is ENOENT', async (t) => {
  await t.rejects(createSftpDriver({ ...base, root: 'no/such/folder' }), { code: 'ENOENT' })
})

t.test('wrong password → EAUTH, quickly', async (t) => {
  const started = Date.now()
  await t.rejects(createSftpDriver({ ...base, password: 'wrong', root: '' }), { code: 'EAUTH' })
  t.ok(Date.now() - started < QUICK_MS, `answered in ${Date.now() - started} ms`)
})

t.test('host key: the right fingerprint passes, another is refused (EUNAVAILABLE, not retryable)', async (t) => {
  const d = await open(t, { hostkey: sshd.hostkeyFingerprint })
  t.match(await d.stat(ctx(), '/'), { kind: 'dir' })
  const wrong = `SHA256:${randomBytes(32).toString('base64').replace(/=+$/, '')}`
  await t.rejects(createSftpDriver({ ...base, root: '', hostkey: wrong }), { code: 'EUNAVAILABLE', retryable: false, message: /host key/ })
})

t.test('a server that accepts but never answers → ETIMEDOUT, within the timeout', async (t) => {
  const silent = createServer(() => {})
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    silent.close()
  })
  const port = (silent.address() as AddressInfo).port
  const started = Date.now()
  await t.rejects(createSftpDriver({ ...base, port, root: '', timeoutMs: 500 }), { code: 'ETIMEDOUT' })
  t.ok(Date.now() - started < 5000, `gave up after ${Date.now() - started} ms`)
})

t.test('nothing listening → EUNAVAILABLE', async (t) => {
  const { freePort } = await import('../servers/process.js')
  await t.rejects(createSftpDriver({ ...base, port: await freePort(), root: '' }), { code: 'EUNAVAILABLE' })
})

t.test('features: posix-rename makes renames atomic; mtimes in seconds', async (t) => {
  const d = await open(t)
  t.same(d.features, { emptyDirs: true, atomicRename: true, rangeRead: true, mtimePrecisionMs: 1000, refusedNameChars: '' })
})

t.test('a symlink is followed and marked; a dangling one is not listed; remove takes the link only', async (t) => {
  const d = await open(t)
  // Planted through the file system: the server is local.
  writeFileSync(join(d.dir, 'target.txt'), 'abc')
  mkdirSync(join(d.dir, 'sub'))
  symlinkSync('target.txt', join(d.dir, 'to-file'))
  symlinkSync('sub', join(d.dir, 'to-dir'))
  symlinkSync('nowhere', join(d.dir, 'dangling'))
  const all: Entry[] = []
  for await (const page of d.list(ctx(), '/')) all.push(...page)
  all.sort((a, b) => a.name.localeCompare(b.name))
  t.match(all, [
    { name: 'sub', kind: 'dir' },
    { name: 'target.txt', kind: 'file', size: 3 },
    { name: 'to-dir', kind: 'dir', link: true },
    { name: 'to-file', kind: 'file', size: 3, link: true },
  ])
  t.equal(all.length, 4)
  t.match(await d.stat(ctx(), '/to-file'), { kind: 'file', size: 3, link: true })
  await d.remove(ctx(), '/to-dir')
  t.ok(existsSync(join(d.dir, 'sub')), 'the linked folder stays')
  t.notOk(readdirSync(d.dir).includes('to-dir'), 'the link is gone')
})

t.test('the pool survives a server restart: dead sessions are dropped', async (t) => {
  const d = await open(t)
  await d.mkdir(ctx(), '/x')
  await sshd.stop()
  await t.rejects(d.stat(ctx(), '/x'), { code: 'EUNAVAILABLE' }, 'server down: EUNAVAILABLE')
  await sshd.start()
  t.match(await d.stat(ctx(), '/x'), { kind: 'dir' }, 'server back: the next call works')
  t.ok(existsSync(sshd.root))
})

/** Rejects when `p` has not settled after `ms`: a hang fails here, named, instead of ending the process quietly. */
function settlesWithin<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const hang = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`still pending after ${ms} ms`)), ms)))
  return Promise.race([p, hang]).finally(() => clearTimeout(timer))
}

// Two moments to lose the server: with writes in flight (ssh2 fails them), and between two
// chunks, once every write was answered and the client has seen the connection close:
// ssh2 never answers a request made on a closed channel, and the upload used to wait for
// ever (the test process then ended with the test unfinished).
for (const between of [false, true]) {
  const when = between ? 'between two chunks' : 'with writes in flight'
  t.test(`an upload cut by a server restart (${when}) leaves no temporary file once the server is back`, async (t) => {
    const d = await open(t)
    await d.mkdir(ctx(), '/x')
    const parts = (): string[] => readdirSync(join(d.dir, 'x')).filter((n) => n.endsWith('.part'))
    const MiB = 1024 * 1024
    async function* body(): AsyncGenerator<Uint8Array> {
      yield randomBytes(MiB)
      if (between) {
        // Until the chunk is on the server: every write of it was answered.
        while (statSync(join(d.dir, 'x', parts()[0] ?? 'none'), { throwIfNoEntry: false })?.size !== MiB) await new Promise((r) => setTimeout(r, 20))
      }
      await sshd.stop() // the connection goes with the server: the temporary file cannot be deleted now
      if (between) await new Promise((r) => setTimeout(r, 200)) // the client sees the connection close
      yield randomBytes(MiB)
    }
    await t.rejects(settlesWithin(d.write(ctx(), '/x/up.bin', body()), 30_000), { name: 'FsError' }, 'the upload fails')
    t.equal(parts().length, 1, 'its temporary file stays while the server is away')
    await sshd.start()
    t.match(await d.stat(ctx(), '/x'), { kind: 'dir' }, 'server back: a request succeeds')
    const deadline = Date.now() + 15_000
    while (parts().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    t.same(parts(), [], 'and the temporary file is deleted after it')
    t.notOk(existsSync(join(d.dir, 'x/up.bin')), 'no target file either')
  })
}
