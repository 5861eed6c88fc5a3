/**
 * The SFTP gateway's SSH threads (`sftp.threads`): connections served in SSH threads
 * (spread over two) and in the main thread (0) do the same transfers: parallel uploads
 * and downloads by OpenSSH's `sftp` land whole and come back the same. (Every other SFTP
 * test runs with the default, SSH threads on a machine of two cores or more.)
 */
import { randomBytes } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { serverDir } from '../../servers/process.js'
import { sftpBatch } from './clients.js'
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
