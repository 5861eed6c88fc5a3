/**
 * @module test/gateway-fs/smb.test
 * The gateway layer over a real worker pool and the smb backend: a real Samba smbd on
 * 127.0.0.1, each case in a fresh folder of the share (the view's root); writes that
 * are not a `put` go through staging (the storage cannot write at an offset).
 */
import { randomBytes } from 'node:crypto'
import { chownSync, mkdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { WorkerPool } from '../../workers/pool.js'
import { startSamba } from '../servers/samba.js'
import { ctx, runCases, viewsOver } from './cases.js'
import { Channel } from '../../workers/client.js'

t.setTimeout(600_000)
const smb = await startSamba(t)
const pool = new WorkerPool({ workers: 2, tasksPerWorker: 16, maxQueue: 1000 })
t.teardown(() => pool.close())
const owner = statSync(smb.dir)

await t.test('in place: not offered, so the cases run through staging only', async (t) => {
  // Were the driver to gain writeAt, this fails: then run the cases in place too.
  const can = await new Channel(pool, { type: 'smb' as const, hostname: smb.hostname, port: smb.port, share: smb.share, domain: smb.domain, username: smb.username, password: smb.password, root: '' }).call(ctx(), { op: 'abilities' })
  t.equal(can.inPlaceWrites, false, 'the smb driver cannot write at an offset (it has no writeAt): every write that is not a put goes through staging')
})

await runCases(t, 'gateway fs over smb, through staging', async (t) => {
  const name = `gw-${randomBytes(6).toString('hex')}`
  const root = join(smb.dir, name)
  mkdirSync(root)
  chownSync(root, owner.uid, owner.gid)
  const spec = { type: 'smb' as const, hostname: smb.hostname, port: smb.port, share: smb.share, domain: smb.domain, username: smb.username, password: smb.password, root: name }
  return viewsOver(t, {
    pool,
    spec,
    root,
    staging: t.testdir(),
    inPlace: false,
    own: (abs) => chownSync(abs, owner.uid, owner.gid),
    refusedNameChars: '\\:*?"<>|',
    skipNames: [{ names: ['trailing space '], reason: 'Windows names cannot end with a space: Samba stores the file but lists it under a mangled 8.3 name' }],
  })
})
