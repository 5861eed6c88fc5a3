/**
 * @module test/gateway-fs/handle-actors.test
 * A gateway's open files live in the worker that owns the backend (workers/handles/):
 * when that worker thread dies, its open files fail, nothing half written is committed,
 * the staging copy it was writing and the upload's temporary file are removed, and the
 * view goes on serving from the replacement thread. Real pool, local driver.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { FULL_ACCESS } from '../../core/permissions.js'
import { openView } from '../../gateways/connection/view.js'
import { WorkerPool } from '../../workers/pool.js'
import { MiB, waitFor } from './cases.js'

const flags = (f: Partial<Record<'read' | 'write' | 'append' | 'create' | 'truncate' | 'exclusive', boolean>>) => ({
  read: false,
  write: false,
  append: false,
  create: false,
  truncate: false,
  exclusive: false,
  ...f,
})
/** A staging folder of the test's own, removed after it. */
function stagingOf(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'filegate-handle-staging-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return join(dir, 'gateway-staging')
}
const ctx = () => ({ requestId: 'h', signal: new AbortController().signal })

t.test('the thread holding open files dies: they fail, nothing is committed, no staging copy or temporary file is left', async (t) => {
  const pool = new WorkerPool({ workers: 1, tasksPerWorker: 16, maxQueue: 1000 })
  t.teardown(() => pool.close())
  const root = t.testdir({ 'staged.bin': 'old staged', 'put.bin': 'old put' })
  const staging = stagingOf(t)
  const fs = await openView({ pool, spec: { type: 'local', root }, permissions: FULL_ACCESS, stagingDir: staging, inPlace: false })
  t.teardown(() => fs.close())

  const s = await fs.open(ctx(), '/staged.bin', flags({ read: true, write: true }))
  await s.write(0, randomBytes(MiB))
  t.equal(readdirSync(staging).length, 1, 'the staging copy exists (written by the worker)')
  const p = await fs.open(ctx(), '/put.bin', flags({ write: true, create: true, truncate: true }))
  await p.write(0, randomBytes(3 * MiB))
  await waitFor(() => readdirSync(root).some((n) => n.endsWith('.part')))

  await pool.threads[0]!.terminate()
  await t.rejects(s.close(), { code: 'EIO' }, 'the staging handle fails')
  await t.rejects(p.write(3 * MiB, randomBytes(10)).then(() => p.close()), { code: 'EIO' }, 'the put fails')
  await waitFor(() => readdirSync(staging).length === 0 && !readdirSync(root).some((n) => n.endsWith('.part'))).catch(() => t.fail(`left: ${readdirSync(staging).join()} / ${readdirSync(root).join()}`))
  t.pass('no staging copy and no temporary file left')
  t.equal(readFileSync(join(root, 'staged.bin'), 'utf8'), 'old staged', 'nothing committed through staging')
  t.equal(readFileSync(join(root, 'put.bin'), 'utf8'), 'old put', 'nothing committed of the put')
  t.equal(fs.stats.openHandles, 0, 'both handles ended')

  const again = await fs.open(ctx(), '/put.bin', flags({ write: true, create: true, truncate: true }))
  await again.write(0, Buffer.from('new'))
  await again.close()
  t.equal(readFileSync(join(root, 'put.bin'), 'utf8'), 'new', 'the next open works on the replacement thread')
})

t.test('closing the view aborts its staging handles: the worker removes their copies', async (t) => {
  const pool = new WorkerPool({ workers: 1, tasksPerWorker: 16, maxQueue: 1000 })
  t.teardown(() => pool.close())
  const root = t.testdir({ 'a.bin': 'old' })
  const staging = stagingOf(t)
  const fs = await openView({ pool, spec: { type: 'local', root }, permissions: FULL_ACCESS, stagingDir: staging, inPlace: false })
  const h = await fs.open(ctx(), '/a.bin', flags({ write: true, append: true }))
  await h.write(0, Buffer.from(' and more'))
  t.equal(readdirSync(staging).length, 1)
  fs.close()
  await waitFor(() => !existsSync(staging) || readdirSync(staging).length === 0)
  t.pass('the copy is gone')
  t.equal(readFileSync(join(root, 'a.bin'), 'utf8'), 'old', 'nothing committed')
  writeFileSync(join(root, 'b'), '') // the folder is still usable
})
