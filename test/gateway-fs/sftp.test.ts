/**
 * @module test/gateway-fs/sftp.test
 * The gateway layer over a real worker pool and the sftp backend: a real OpenSSH sshd
 * on 127.0.0.1, each case in a fresh folder of its user's home (the view's root); writes
 * that are not a `put` in place (SFTP handles opened without truncation), then through staging.
 */
import { randomBytes } from 'node:crypto'
import { chownSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { openView } from '../../gateways/connection/view.js'
import { WorkerPool } from '../../workers/pool.js'
import { startSshd } from '../servers/sshd.js'
import { runCases, viewsOver } from './cases.js'
import { FULL_ACCESS } from '../../core/permissions.js'

const sshd = await startSshd(t)
const pool = new WorkerPool({ workers: 2, tasksPerWorker: 16, maxQueue: 1000 })
t.teardown(() => pool.close())

for (const inPlace of [true, false]) {
  await runCases(t, `gateway fs over sftp, ${inPlace ? 'in place' : 'through staging'}`, async (t) => {
    const name = `gw-${randomBytes(6).toString('hex')}`
    const root = join(sshd.root, name)
    mkdirSync(root)
    chownSync(root, sshd.uid, sshd.gid)
    const staging = t.testdir()
    const spec = { type: 'sftp' as const, hostname: '127.0.0.1', port: sshd.port, username: sshd.username, password: sshd.password, root: name }
    return viewsOver(t, { pool, spec, root, staging, inPlace, own: (abs) => chownSync(abs, sshd.uid, sshd.gid) })
  })
}

await t.test('opening a view logs in to the backend: a wrong password is EAUTH', async (t) => {
  const spec = { type: 'sftp' as const, hostname: '127.0.0.1', port: sshd.port, username: sshd.username, password: 'not the password', root: '' }
  await t.rejects(openView({ pool, spec, permissions: FULL_ACCESS, stagingDir: t.testdir() }), { code: 'EAUTH', name: 'FsError' })
})
