/**
 * @module test/gateway-fs/local.test
 * The gateway layer over a real worker pool and the local driver (tmp folders).
 */
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { openView } from '../../gateways/connection/view.js'
import { WorkerPool } from '../../workers/pool.js'
import { MiB, runCases, viewsOver } from './cases.js'
import { FULL_ACCESS } from '../../core/permissions.js'

const pool = new WorkerPool({ workers: 2, tasksPerWorker: 16, maxQueue: 1000 })
t.teardown(() => pool.close())

for (const inPlace of [true, false]) {
  await runCases(t, `gateway fs over local, ${inPlace ? 'in place' : 'through staging'}`, async (t) => {
    const root = t.testdir()
    const staging = join(t.testdirName + '-staging')
    return viewsOver(t, { pool, spec: { type: 'local', root }, root, staging, inPlace })
  })
}

await t.test('a symlink planted in the root that leads outside: EACCES, never the outside content', async (t) => {
  const outside = t.testdir({ 'secret.txt': 'outside secret', sub: { 'x.txt': 'outside too' } })
  const root = join(t.testdirName, '..', `${t.name.length}-root-${process.pid}`)
  mkdirSync(root, { recursive: true })
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  writeFileSync(join(root, 'inside.txt'), 'inside')
  symlinkSync(join(outside, 'secret.txt'), join(root, 'leak'))
  symlinkSync(outside, join(root, 'leakdir'))
  symlinkSync('inside.txt', join(root, 'ok-link'))
  const fs = await openView({ pool, spec: { type: 'local', root }, permissions: FULL_ACCESS, stagingDir: join(root, '..', 'staging-sym') })
  t.teardown(() => fs.close())
  const c = () => ({ requestId: 'sym', signal: new AbortController().signal })
  const refuse = async (p: Promise<unknown>, what: string) => {
    await p.then(
      () => t.fail(`${what}: succeeded`),
      (err: { code?: string; message?: string }) => {
        t.equal(err.code, 'EACCES', `${what}: EACCES`)
        t.notMatch(String(err.message), outside, `${what}: the message does not show the outside path`)
      },
    )
  }
  await refuse(fs.stat(c(), '/leak'), 'stat')
  await refuse(fs.lstat(c(), '/leak'), 'lstat')
  await refuse(fs.open(c(), '/leak', { read: true, write: false, append: false, create: false, truncate: false, exclusive: false }), 'open for reading')
  await refuse(fs.open(c(), '/leak', { read: false, write: true, append: false, create: true, truncate: true, exclusive: false }), 'open for writing')
  await refuse(fs.open(c(), '/leakdir/x.txt', { read: true, write: false, append: false, create: false, truncate: false, exclusive: false }), 'open through a linked folder')
  await refuse(fs.list(c(), '/leakdir'), 'list of a linked folder')
  await refuse(fs.copy(c(), '/leak', '/copied', { overwrite: false }), 'copy')
  await refuse(fs.truncate(c(), '/leak', 0), 'truncate')
  await refuse(fs.setMode(c(), '/leak', 0o777), 'setMode')
  await refuse(fs.mkdir(c(), '/leakdir/new'), 'mkdir through a linked folder')
  const listed = (await fs.list(c(), '/')).entries.map((e) => e.name)
  t.same(listed.sort(), ['inside.txt', 'ok-link'], 'links leading outside are not listed')
  t.match(await fs.lstat(c(), '/ok-link'), { link: true }, 'a link inside is reported as a link')
  t.match(await fs.stat(c(), '/ok-link'), { kind: 'file', size: 6 })
  t.equal(readFileSync(join(outside, 'secret.txt'), 'utf8'), 'outside secret', 'outside untouched')
  t.same(readdirSync(join(outside, 'sub')), ['x.txt'])
})

await t.test('put: writes far ahead of a gap past the window make a hole; bytes already sent cannot be rewritten', async (t) => {
  const root = t.testdir()
  const fs = await openView({ pool, spec: { type: 'local', root }, permissions: FULL_ACCESS, stagingDir: join(root, '..', 'st-window'), limits: { windowBytes: MiB, chunkBytes: 256 * 1024 } })
  t.teardown(() => fs.close())
  const c = () => ({ requestId: 'w', signal: new AbortController().signal })
  const head = randomBytes(64 * 1024)
  const far = randomBytes(2 * MiB)
  const h = await fs.open(c(), '/f', { read: false, write: true, append: false, create: true, truncate: true, exclusive: false })
  await h.write(0, head)
  await h.write(5 * MiB, far) // held past the 1 MiB window: the gap becomes zeros and goes out
  await h.write(10, Buffer.from('late')).then(
    () => t.fail('a rewrite of bytes already sent succeeded'),
    (err: { code?: string }) => t.equal(err.code, 'ENOTSUP', 'a rewrite of bytes already sent: ENOTSUP'),
  )
  await h.close()
  const got = readFileSync(join(root, 'f'))
  t.equal(got.length, 7 * MiB)
  t.same(got.subarray(0, head.length), head, 'the head')
  t.ok(got.subarray(head.length, 5 * MiB).every((b) => b === 0), 'the hole: zeros')
  t.same(got.subarray(5 * MiB), far, 'the far bytes')
})

await t.test('setMode never sets set-user-ID, set-group-ID or sticky bits on the server disk', async (t) => {
  const root = t.testdir({ 'tool.sh': '#!/bin/sh\n' })
  const fs = await openView({ pool, spec: { type: 'local', root }, permissions: FULL_ACCESS, stagingDir: join(root, '..', 'st-mode') })
  t.teardown(() => fs.close())
  await fs.setMode({ requestId: 'm', signal: new AbortController().signal }, '/tool.sh', 0o6755)
  t.equal(statSync(join(root, 'tool.sh')).mode & 0o7777, 0o755)
  await fs.setMode({ requestId: 'm', signal: new AbortController().signal }, '/', 0o1777)
  t.equal(statSync(root).mode & 0o7777, 0o777)
})
