/**
 * @module test/gateway-fs/handle-actors.test
 * A gateway's open files live in the worker that owns the backend (workers/handles/).
 * When that worker thread dies: a file only read goes on from another thread, at the
 * offsets its reads ask, if the file has not changed (else its reads fail with EIO saying
 * so); a file that writes fails, nothing half written is committed, the staging copy it
 * was writing and the upload's temporary file are removed; and the view goes on serving
 * from the replacement thread. Real pool, local driver.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { FULL_ACCESS } from '../../core/permissions.js'
import { openView } from '../../gateways/connection/view.js'
import type { FileHandle } from '../../core/view.js'
import { MAX_REOPENS } from '../../gateways/connection/file-handle.js'
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

/** Kills the pool's only thread and waits for its replacement. */
async function killThread(pool: WorkerPool): Promise<void> {
  const killed = pool.threads[0]!
  await killed.terminate()
  await waitFor(() => pool.threads.length === 1 && pool.threads[0] !== killed)
}

/** Reads `h` from `from` up to `size` in SFTP-sized reads, several in flight. */
async function readRest(h: FileHandle, from: number, size: number, step = 255 * 1024): Promise<Buffer> {
  const parts: Uint8Array[] = []
  for (let off = from; off < size; off += step * 8) {
    const offs = Array.from({ length: 8 }, (_, i) => off + i * step).filter((o) => o < size)
    parts.push(...(await Promise.all(offs.map((o) => h.read(o, Math.min(step, size - o))))))
  }
  return Buffer.concat(parts)
}

t.test('a file only read goes on from another thread when its thread dies: the reads in flight and the next ones, at their offsets', async (t) => {
  const pool = new WorkerPool({ workers: 1, tasksPerWorker: 16, maxQueue: 1000 })
  t.teardown(() => pool.close())
  const content = randomBytes(24 * MiB)
  const root = t.testdir({ 'big.bin': content })
  const fs = await openView({ pool, spec: { type: 'local', root }, permissions: FULL_ACCESS, stagingDir: stagingOf(t) })
  t.teardown(() => fs.close())

  const h = await fs.open(ctx(), '/big.bin', flags({ read: true }))
  const first = await readRest(h, 0, 4 * MiB)
  t.ok(first.equals(content.subarray(0, 4 * MiB)), 'the first 4 MiB, from the read-ahead stream')
  // Reads in flight as the thread dies: answered all the same.
  const streams = fs.stats.readStreams
  const inFlight = Array.from({ length: 256 }, (_, i) => h.read(4 * MiB + i * 64 * 1024, 64 * 1024))
  const killed = killThread(pool)
  const got = await Promise.all(inFlight)
  t.ok(Buffer.concat(got).equals(content.subarray(4 * MiB, 20 * MiB)), 'the reads in flight as the thread died are answered, byte-exact')
  t.ok(fs.stats.readStreams > streams, 'from a new read-ahead stream, on the new thread')
  await killed
  // Killed between two reads: the next one opens the file on the new thread.
  await killThread(pool)
  const rest = await readRest(h, 20 * MiB, content.length)
  t.ok(rest.equals(content.subarray(20 * MiB)), 'the rest is read on the new thread, byte-exact')
  t.same(await h.read(content.length, 10), new Uint8Array(0), 'the end of the file reads as empty')
  await t.resolves(h.close(), 'close')
  t.equal(fs.stats.openHandles, 0)
  t.equal(fs.stats.liveReadStreams, 0, 'no read-ahead stream left')
  t.equal(pool.stats.transfers, 0, 'no transfer counted on any thread')
})

t.test('a file only read whose thread died, and that changed meanwhile, fails its next read with EIO saying so', async (t) => {
  const pool = new WorkerPool({ workers: 1, tasksPerWorker: 16, maxQueue: 1000 })
  t.teardown(() => pool.close())
  const content = randomBytes(4 * MiB)
  const root = t.testdir({ 'grown.bin': content, 'touched.bin': content, 'gone.bin': content, 'same.bin': content })
  const fs = await openView({ pool, spec: { type: 'local', root }, permissions: FULL_ACCESS, stagingDir: stagingOf(t) })
  t.teardown(() => fs.close())
  const open = async (name: string) => {
    const h = await fs.open(ctx(), `/${name}`, flags({ read: true }))
    t.ok(Buffer.from(await h.read(0, MiB)).equals(content.subarray(0, MiB)), `${name}: read before`)
    return h
  }
  const handles = { grown: await open('grown.bin'), touched: await open('touched.bin'), gone: await open('gone.bin'), same: await open('same.bin') }
  await killThread(pool)

  writeFileSync(join(root, 'grown.bin'), Buffer.concat([content, Buffer.from('more')])) // a new size
  const was = statSync(join(root, 'touched.bin'))
  writeFileSync(join(root, 'touched.bin'), randomBytes(content.length)) // the same size, another mtime
  utimesSync(join(root, 'touched.bin'), was.atime, new Date(was.mtimeMs + 5000))
  rmSync(join(root, 'gone.bin'))
  for (const name of ['grown', 'touched', 'gone'] as const) {
    await t.rejects(handles[name].read(MiB, MiB), { code: 'EIO', message: /changed since it was opened/ }, `${name}: the next read fails, saying the file changed`)
    await t.rejects(handles[name].read(2 * MiB, MiB), { code: 'EIO' }, `${name}: and so do the reads after it`)
    await t.resolves(handles[name].close(), `${name}: its close is no failure (nothing to commit)`)
  }
  t.ok(Buffer.from(await handles.same.read(MiB, MiB)).equals(content.subarray(MiB, 2 * MiB)), 'the unchanged file is read on')
  await handles.same.close()
  t.equal(fs.stats.openHandles, 0)
})

t.test(`a file only read is opened again at most ${MAX_REOPENS} times: a thread that dies every time is not replaced forever`, async (t) => {
  const pool = new WorkerPool({ workers: 1, tasksPerWorker: 16, maxQueue: 1000 })
  t.teardown(() => pool.close())
  const content = randomBytes(2 * MiB)
  const root = t.testdir({ 'a.bin': content })
  const fs = await openView({ pool, spec: { type: 'local', root }, permissions: FULL_ACCESS, stagingDir: stagingOf(t) })
  t.teardown(() => fs.close())
  const h = await fs.open(ctx(), '/a.bin', flags({ read: true }))
  for (let i = 0; i < MAX_REOPENS; i++) {
    await killThread(pool)
    t.ok(Buffer.from(await h.read(i * 1000, 1000)).equals(content.subarray(i * 1000, (i + 1) * 1000)), `read on after death ${i + 1}`)
  }
  await killThread(pool)
  await t.rejects(h.read(0, 10), { code: 'EIO', message: /stopped 4 times/ }, 'then the read fails')
  await t.resolves(h.close())
})

t.test('the thread dies while it fills a staging copy with the file: the copy is removed', async (t) => {
  const pool = new WorkerPool({ workers: 1, tasksPerWorker: 16, maxQueue: 1000 })
  t.teardown(() => pool.close())
  const root = t.testdir({})
  writeFileSync(join(root, 'big.bin'), randomBytes(128 * MiB))
  const staging = stagingOf(t)
  const fs = await openView({ pool, spec: { type: 'local', root }, permissions: FULL_ACCESS, stagingDir: staging, inPlace: false })
  t.teardown(() => fs.close())
  const h = await fs.open(ctx(), '/big.bin', flags({ read: true, write: true }))
  // The first write makes the copy, filled with the whole file first.
  const written = h.write(0, Buffer.from('x')).then(
    () => 'written',
    (err: { code?: string }) => err.code,
  )
  const copySize = () => (existsSync(staging) ? readdirSync(staging).map((n) => statSync(join(staging, n)).size) : [])
  await waitFor(() => copySize().some((n) => n > 0))
  const size = copySize()[0]!
  await pool.threads[0]!.terminate()
  t.ok(size < 128 * MiB, `killed while the copy was filled (${size} bytes of ${128 * MiB})`)
  t.equal(await written, 'EIO', 'the write fails')
  await t.rejects(h.close(), { code: 'EIO' }, 'and the close')
  await waitFor(() => readdirSync(staging).length === 0).then(
    () => t.pass('the half-filled copy is removed'),
    () => t.fail(`left: ${readdirSync(staging).join()}`),
  )
  t.equal(statSync(join(root, 'big.bin')).size, 128 * MiB, 'the file is as it was')
})

t.test('the thread dies under a file written in place: its next write and its close fail; the runs already written stay', async (t) => {
  const pool = new WorkerPool({ workers: 1, tasksPerWorker: 16, maxQueue: 1000 })
  t.teardown(() => pool.close())
  const root = t.testdir({ 'log.txt': 'old\n' })
  const fs = await openView({ pool, spec: { type: 'local', root }, permissions: FULL_ACCESS, stagingDir: stagingOf(t) })
  t.teardown(() => fs.close())
  const h = await fs.open(ctx(), '/log.txt', flags({ read: true, write: true }))
  await h.write(4, Buffer.from('line 1\n'))
  t.equal(Buffer.from(await h.read(0, 100)).toString(), 'old\nline 1\n', 'the write landed (a read on the handle waits for it)')
  await killThread(pool)
  await t.rejects(h.write(11, Buffer.from('line 2\n')), { code: 'EIO' }, 'the next write fails')
  await t.rejects(h.close(), { code: 'EIO' }, 'so does the close')
  t.equal(readFileSync(join(root, 'log.txt'), 'utf8'), 'old\nline 1\n', 'what was written in place before stays, nothing after')
})
