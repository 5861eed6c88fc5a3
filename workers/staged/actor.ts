/**
 * @module workers/staged/actor
 * WORKER THREAD. Staged uploads (core/staged.ts) on the staging folder: every open,
 * write, stat and removal of a staged byte happens here, on a pool thread, never on the
 * main thread (and the commit reads them on the pool thread that writes the target:
 * commit.ts). A write takes its bytes from a credit-based port stream and
 * hashes them as they are written (an S3 part's MD5): the main thread neither touches
 * the disk nor hashes.
 *
 * An upload is nothing but its files: any thread of any node sharing the folder serves
 * any op of any upload, so a thread that dies loses no upload (the main thread removes
 * the part it was writing; a tus file keeps what reached the disk, which is where its
 * client resumes).
 */
import { createHash } from 'node:crypto'
import * as fs from 'node:fs/promises'
import { join } from 'node:path'
import type { OpContext } from '../../core/driver.js'
import { FsError } from '../../core/errors.js'
import { assertNever } from '../../core/messages.js'
import { type ByteBudget, PortReader } from '../../core/port-stream.js'
import type { StagedEntry, StagedPart, StagedReplies, StagedRequest, StagedState, StagedWriteResult } from '../../core/staged.js'
import { asFsError, stagedPath } from './files.js'

/** A record file `take` reads is small; anything larger is not one. */
const MAX_TAKE = 1024 * 1024

/** One op. */
export async function runStaged(req: StagedRequest, ctx: OpContext, budget: ByteBudget): Promise<StagedReplies[StagedRequest['op']]> {
  try {
    return await op(req, ctx, budget)
  } catch (err) {
    throw asFsError(err)
  }
}

async function op(req: StagedRequest, ctx: OpContext, budget: ByteBudget): Promise<StagedReplies[StagedRequest['op']]> {
  switch (req.op) {
    case 'prepare':
      await fs.mkdir(req.area, { recursive: true, mode: 0o700 })
      return null
    case 'create': {
      await fs.mkdir(req.area, { recursive: true, mode: 0o700 })
      const path = stagedPath(req.area, req.id)
      if (req.layout === 'parts') await fs.mkdir(path, { mode: 0o700 })
      else await (await fs.open(path, 'wx', 0o600)).close()
      return null
    }
    case 'write':
      return write(req, ctx, budget)
    case 'state':
      return state(stagedPath(req.area, req.id))
    case 'remove': {
      const path = stagedPath(req.area, req.name, req.part)
      const size = await sizeOf(path)
      await fs.rm(path, { recursive: true, force: true })
      return size
    }
    case 'entries':
      return entries(req.area)
    case 'take': {
      const path = stagedPath(req.area, req.name)
      let text: string
      try {
        const st = await fs.stat(path)
        text = st.size > MAX_TAKE ? '' : await fs.readFile(path, 'utf8')
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
        throw err
      }
      await fs.rm(path, { force: true })
      return text
    }
    case 'freeBytes':
      try {
        const s = await fs.statfs(req.dir)
        return s.bavail * s.bsize
      } catch {
        return Infinity // not there yet (made by the first write): the write itself tells
      }
    default:
      return assertNever(req)
  }
}

/**
 * Writes the port's bytes at the offset, hashing them on the way when asked. A part
 * that does not finish is removed here; what reached an upload's one file stays.
 */
async function write(req: Extract<StagedRequest, { op: 'write' }>, ctx: OpContext, budget: ByteBudget): Promise<StagedWriteResult> {
  const body = new PortReader(req.port, { budget })
  const onAbort = () => body.fail(new FsError('ECANCELED', 'the upload was cancelled'))
  ctx.signal.addEventListener('abort', onAbort, { once: true })
  const path = stagedPath(req.area, req.id, req.part)
  let fh: fs.FileHandle | null = null
  try {
    // A part is new (never replaces another's bytes); an upload's file exists since its creation.
    fh = await fs.open(path, req.part === undefined ? 'r+' : 'wx', 0o600)
    const hash = req.digest === undefined ? null : createHash(req.digest)
    let pos = req.offset
    for await (const chunk of body) {
      hash?.update(chunk)
      let done = 0
      while (done < chunk.byteLength) done += (await fh.write(chunk, done, chunk.byteLength - done, pos + done)).bytesWritten
      pos += chunk.byteLength
    }
    await fh.close()
    fh = null
    const bytes = pos - req.offset
    return hash === null ? { bytes } : { bytes, md5: hash.digest('hex') }
  } catch (err) {
    await fh?.close().catch(() => {})
    if (req.part !== undefined && fh !== null) await fs.rm(path, { force: true })
    throw err
  } finally {
    ctx.signal.removeEventListener('abort', onAbort)
    body.cancel() // no-op after a complete read; stops the sender when the write failed early
  }
}

async function state(path: string): Promise<StagedState | null> {
  let st
  try {
    st = await fs.stat(path)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw err
  }
  if (!st.isDirectory()) return { layout: 'file', size: st.size, mtimeMs: st.mtimeMs }
  const parts: StagedPart[] = []
  for (const file of await fs.readdir(path).catch(() => [] as string[])) {
    const p = await fs.stat(join(path, file)).catch(() => null)
    if (p?.isFile()) parts.push({ file, size: p.size, mtimeMs: p.mtimeMs })
  }
  return { layout: 'parts', parts }
}

async function entries(area: string): Promise<StagedEntry[]> {
  let names: string[]
  try {
    names = await fs.readdir(area)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw err
  }
  const out: StagedEntry[] = []
  for (const name of names) {
    const st = await fs.stat(join(area, name)).catch(() => null)
    if (st) out.push({ name, mtimeMs: st.mtimeMs })
  }
  return out
}

async function sizeOf(path: string): Promise<number> {
  const st = await fs.stat(path).catch(() => null)
  if (st === null) return 0
  if (!st.isDirectory()) return st.size
  let n = 0
  for (const f of await fs.readdir(path).catch(() => [] as string[])) n += await sizeOf(join(path, f))
  return n
}
