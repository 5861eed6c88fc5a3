/**
 * @module test/gateway-fs/ftp.test
 * The gateway layer over a real worker pool and the ftp backend: a real vsftpd on
 * 127.0.0.1, each case in a fresh folder of its user's home (the view's root); writes
 * that are not a `put` go through staging (the storage cannot write at an offset).
 */
import { chownSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { WorkerPool } from '../../workers/pool.js'
import { userFolder } from '../servers/users.js'
import { startVsftpd } from '../servers/vsftpd.js'
import { ctx, runCases, viewsOver } from './cases.js'
import { Channel } from '../../workers/client.js'

t.setTimeout(600_000)
const ftpd = await startVsftpd(t)
const pool = new WorkerPool({ workers: 2, tasksPerWorker: 16, maxQueue: 1000 })
t.teardown(() => pool.close())

await t.test('in place: not offered, so the cases run through staging only', async (t) => {
  // Were the driver to gain writeAt, this fails: then run the cases in place too.
  const can = await new Channel(pool, { type: 'ftp' as const, hostname: '127.0.0.1', port: ftpd.port, username: ftpd.username, password: ftpd.password, secure: false, root: userFolder(ftpd) }).call(ctx(), { op: 'abilities' })
  t.equal(can.inPlaceWrites, false, 'the ftp driver cannot write at an offset (it has no writeAt): every write that is not a put goes through staging')
})

await runCases(t, 'gateway fs over ftp, through staging', async (t) => {
  const name = userFolder(ftpd)
  const spec = { type: 'ftp' as const, hostname: '127.0.0.1', port: ftpd.port, username: ftpd.username, password: ftpd.password, secure: false, root: name }
  return viewsOver(t, { pool, spec, root: join(ftpd.root, name), staging: t.testdir(), inPlace: false, own: (abs) => chownSync(abs, ftpd.uid, ftpd.gid) })
})
