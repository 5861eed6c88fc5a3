/**
 * The SFTP gateway's staging copies are bounded like every staged upload (issue 23,
 * item 8): on a storage that cannot write in place (an S3 bucket), a file opened without
 * truncation is written through a private copy in the data folder. A login writing past
 * `staging_limits.per_login_bytes` is refused (SSH_FX_FAILURE saying which limit), its
 * copy is removed at close, and another user is served. Real client: ssh2.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { api, startTestServer } from '../../helpers/filegate.js'
import { ADMIN_PASSWORD, adminToken } from '../../helpers/share.js'
import { userStorage } from '../../helpers/user-storage.js'
import { serverDir } from '../../servers/process.js'
import { call, ssh2Sftp } from './clients.js'

const MiB = 1024 * 1024

t.test('a login writing past its staging limit through a staging copy is refused; the copy goes; others are served', async (t) => {
  const base = serverDir(t, 'sftp-staging')
  const storage = await userStorage(t, base, 's3')
  const { app, url } = await startTestServer(t, {
    sftp: { port: 0 },
    admin_password: ADMIN_PASSWORD,
    data_dir: join(base, 'data'),
    shutdown_grace_seconds: 1,
    connections: [storage.connection],
    staging_limits: { per_login_bytes: 2 * MiB, reserve_bytes: 0 },
  })
  const admin = api(url, await adminToken(url))
  for (const name of ['mallory', 'alice']) {
    const res = await admin('POST', '/admin/api/users', {}, { body: JSON.stringify({ name, password: `${name}-password-1`, connection: storage.connection.label, root: storage.userRoot }) })
    t.equal(res.status, 200, `user ${name}`)
  }
  const port = app.gateways.find((g) => g.name === 'sftp')!.port!
  const staging = join(base, 'data', 'gateway-staging')
  const mallory = (await ssh2Sftp(t, { port, user: 'mallory', password: 'mallory-password-1' })).sftp
  const seed = await call<Buffer>(mallory.open.bind(mallory), '/big.bin', 'w')
  await call(mallory.write.bind(mallory), seed, Buffer.from('seed'), 0, 4, 0)
  await call(mallory.close.bind(mallory), seed)

  // Opened without truncation: every write goes to a private copy in the data folder.
  const h = await call<Buffer>(mallory.open.bind(mallory), '/big.bin', 'r+')
  const chunk = randomBytes(256 * 1024)
  let refused: Error | null = null
  let written = 0
  for (let off = 0; off < 4 * MiB && refused === null; off += chunk.length) {
    try {
      await call(mallory.write.bind(mallory), h, chunk, 0, chunk.length, off)
      written = off + chunk.length
    } catch (err) {
      refused = err as Error
    }
  }
  t.ok(refused, 'a write past the limit is refused')
  t.match(refused?.message, /staged uploads would be over their limit \(2097152 bytes\)/, 'saying which limit')
  t.ok(written <= 2 * MiB, `no more than the limit was staged (${written} bytes)`)
  await call(mallory.close.bind(mallory), h).catch(() => {})
  t.same(existsSync(staging) ? readdirSync(staging) : [], [], 'the staging copy is gone after close')

  const alice = (await ssh2Sftp(t, { port, user: 'alice', password: 'alice-password-1' })).sftp
  const a = await call<Buffer>(alice.open.bind(alice), '/big.bin', 'r+')
  const data = randomBytes(MiB)
  await call(alice.write.bind(alice), a, data, 0, data.length, 0)
  await call(alice.close.bind(alice), a)
  const back = await call<Buffer>(alice.readFile.bind(alice), '/big.bin')
  t.ok(back.subarray(0, MiB).equals(data), 'another user writes through a staging copy of her own')
})
