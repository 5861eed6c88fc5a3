/**
 * The SFTP gateway's SSH threads (`sftp.threads`): connections served in SSH threads
 * (spread over two) and in the main thread (0) do the same transfers: parallel uploads
 * and downloads by OpenSSH's `sftp` land whole and come back the same. In SSH threads, a
 * user removed through the admin API loses its connection, and the file it was writing is
 * not committed. (Every other SFTP test runs with the default: the main thread.)
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { api } from '../../helpers/filegate.js'
import { adminToken } from '../../helpers/share.js'
import { serverDir } from '../../servers/process.js'
import { call, sftpBatch, ssh2Sftp } from './clients.js'
import { startGateway } from './fixture.js'

const PARALLEL = 4

for (const threads of [2, 0]) {
  t.test(`sftp.threads ${threads}: parallel uploads and downloads land whole`, async (t) => {
    const { login, root } = await startGateway(t, { sftp: { threads } })
    const local = serverDir(t, 'local')
    const files = Array.from({ length: PARALLEL }, (_, i) => {
      const data = randomBytes(3 * 1024 * 1024 + i * 4099)
      const path = join(local, `in-${i}.bin`)
      writeFileSync(path, data)
      return { i, data, path }
    })
    const ran = await Promise.all(files.map((f) => sftpBatch(t, login, `put ${f.path} /up-${f.i}.bin\nget /up-${f.i}.bin ${join(local, `back-${f.i}.bin`)}\n`)))
    for (const [k, r] of ran.entries()) t.equal(r.code, 0, `client ${k} ran (${r.stderr.trim()})`)
    for (const f of files) {
      t.ok(readFileSync(join(root, `up-${f.i}.bin`)).equals(f.data), `upload ${f.i} landed whole`)
      t.ok(readFileSync(join(local, `back-${f.i}.bin`)).equals(f.data), `download ${f.i} came back the same`)
    }
  })
}

t.test('sftp.threads 2: removing the user ends its connection; what it wrote is not committed', async (t) => {
  const { login, url, root } = await startGateway(t, { sftp: { threads: 2 } })
  const admin = api(url, await adminToken(url))
  const { client, sftp } = await ssh2Sftp(t, login)
  const h = await call<Buffer>(sftp.open.bind(sftp), 'half.bin', 'w')
  const data = Buffer.alloc(100_000, 1)
  await call(sftp.write.bind(sftp), h, data, 0, data.length, 0)
  client.on('error', () => {})
  const ended = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 30_000)
    client.once('close', () => {
      clearTimeout(timer)
      resolve(true)
    })
  })
  t.equal((await admin('DELETE', `/admin/api/users/${login.user}`)).status, 200, 'removed')
  t.ok(await ended, 'its connection is ended')
  t.notOk(existsSync(join(root, 'half.bin')), 'the file it was writing is not committed')
})
