/**
 * SFTP transfers whose worker threads die under them (issue 26). Every thread of the
 * pool is killed (`Worker.terminate()` through `pool.threads`), so the thread holding the
 * client's open file is surely among them:
 * - a download goes on, from the replacement threads, byte-exact (OpenSSH's `sftp`,
 *   rate-limited so that it is mid-file; ssh2's client, held after its first chunk);
 * - a download whose file changed meanwhile fails with SSH_FX_FAILURE saying so;
 * - an upload through a staging copy (an S3 storage, a file opened without truncation)
 *   fails at its next write and at CLOSE; the object keeps its old content and the
 *   staging copy is removed.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { Filegate as FilegateApp } from '../../../front/app.js'
import { api, startTestServer } from '../../helpers/filegate.js'
import { sftpDownload } from '../../helpers/held-transfers.js'
import { ADMIN_PASSWORD, adminToken } from '../../helpers/share.js'
import { userStorage } from '../../helpers/user-storage.js'
import { serverDir } from '../../servers/process.js'
import { call, type Login, sftpBatch, ssh2Sftp } from './clients.js'

const MiB = 1024 * 1024

async function until(what: string, cond: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** Kills every worker thread of the pool; resolves once the pool has as many new ones. */
async function killEveryThread(app: FilegateApp): Promise<void> {
  const old = [...app.pool.threads]
  await Promise.all(old.map((w) => w.terminate()))
  await until('new threads', () => app.pool.threads.length === old.length && app.pool.threads.every((w) => !old.includes(w)))
}

/** A filegate with the SFTP gateway, two threads, and a user `alice` on `connection`. */
async function gateway(t: Test, connection: Record<string, unknown>, userRoot = '/', extra: Record<string, unknown> = {}): Promise<{ app: FilegateApp; login: Login }> {
  const { app, url } = await startTestServer(t, { workers: 2, admin_password: ADMIN_PASSWORD, sftp: { port: 0 }, connections: [connection], ...extra })
  const admin = api(url, await adminToken(url))
  const res = await admin('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'alice', password: 'alice-password-1', connection: connection.label, root: userRoot }) })
  t.equal(res.status, 200, 'user alice')
  return { app, login: { port: app.gateways.find((g) => g.name === 'sftp')!.port!, user: 'alice', password: 'alice-password-1' } }
}

t.test('downloads go on from the new threads when every worker thread dies', async (t) => {
  const root = serverDir(t, 'sftp-worker-crash')
  const big = randomBytes(32 * MiB)
  writeFileSync(join(root, 'big.bin'), big)
  const { app, login } = await gateway(t, { label: 'disk', type: 'local', path: root })

  t.test("OpenSSH's sftp, mid-file", async (t) => {
    const local = join(serverDir(t, 'sftp-worker-crash-local'), 'big.bin')
    // 40,000 Kbit/s: about 7 s for the file, so that it is killed mid-file.
    const get = sftpBatch(t, login, `get /big.bin ${local}\n`, ['-l', '40000'])
    await until('the download live on a thread', () => app.pool.stats.transfers >= 1)
    await killEveryThread(app)
    const ran = await get
    t.equal(ran.code, 0, `sftp exits 0 ${ran.stderr}`)
    t.ok(existsSync(local) && readFileSync(local).equals(big), 'the file arrived whole, byte-exact')
  })

  t.test("ssh2's client, held after its first chunk", async (t) => {
    const { sftp } = await ssh2Sftp(t, login)
    const held = await sftpDownload(sftp, '/big.bin')
    await killEveryThread(app)
    const ended = await held.finish()
    t.ok(ended.ok, `the download ends well ${ended.error ?? ''}`)
    t.ok(ended.body?.equals(big), 'byte-exact')
  })
})

t.test('a download whose file changed while its thread died fails with FAILURE saying so', async (t) => {
  const root = serverDir(t, 'sftp-worker-crash')
  writeFileSync(join(root, 'doc.bin'), randomBytes(16 * MiB))
  const { app, login } = await gateway(t, { label: 'disk', type: 'local', path: root })
  const { sftp } = await ssh2Sftp(t, login)
  const held = await sftpDownload(sftp, '/doc.bin')
  await killEveryThread(app)
  writeFileSync(join(root, 'doc.bin'), randomBytes(17 * MiB))
  const ended = await held.finish()
  t.notOk(ended.ok, 'the download fails')
  t.match(ended.error, /changed since it was opened/, `the client is told why: ${ended.error}`)
  // The session goes on: the file as it is now is read whole.
  t.equal((await call<Buffer>(sftp.readFile.bind(sftp), '/doc.bin')).length, 17 * MiB, 'the same session reads the new file')
})

t.test('an upload through a staging copy fails when its thread dies: the object stays, the copy goes', async (t) => {
  const base = serverDir(t, 'sftp-worker-crash')
  const storage = await userStorage(t, base, 's3')
  const { app, login } = await gateway(t, storage.connection, storage.userRoot, { data_dir: join(base, 'data') })
  const staging = join(base, 'data', 'gateway-staging')
  const { sftp } = await ssh2Sftp(t, login)
  await call(sftp.writeFile.bind(sftp), '/obj.bin', Buffer.from('old content'))

  // Opened without truncation, on a storage that cannot write in place: a staging copy.
  const h = await call<Buffer>(sftp.open.bind(sftp), '/obj.bin', 'r+')
  const chunk = randomBytes(256 * 1024)
  for (let off = 0; off < 2 * MiB; off += chunk.length) await call(sftp.write.bind(sftp), h, chunk, 0, chunk.length, off)
  t.equal(readdirSync(staging).length, 1, 'the staging copy is there')
  await killEveryThread(app)
  await t.rejects(call(sftp.write.bind(sftp), h, chunk, 0, chunk.length, 2 * MiB), { code: 4, message: /the worker handling this file stopped/ }, 'the next write fails (FAILURE)')
  await t.rejects(call(sftp.close.bind(sftp), h), { code: 4 }, 'so does CLOSE')
  await until('the copy removed', () => readdirSync(staging).length === 0).then(
    () => t.pass('the staging copy is removed'),
    () => t.fail(`left: ${readdirSync(staging).join()}`),
  )
  t.equal((await call<Buffer>(sftp.readFile.bind(sftp), '/obj.bin')).toString(), 'old content', 'the object keeps its old content')
})
