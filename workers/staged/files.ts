/**
 * @module workers/staged/files
 * WORKER THREAD. The staged files of an upload (core/staged.ts) as the pool threads
 * name, open and read them: one place for the names a door may use (a single path
 * segment each, never a way out of the area) and for how a staging disk's errors read.
 * Used by the staged ops (actor.ts) and by the commit into a storage (commit.ts).
 */
import * as fs from 'node:fs/promises'
import { isAbsolute, join } from 'node:path'
import { FsError, isFsError } from '../../core/errors.js'
import type { StagedSource } from '../../core/staged.js'

/** Read back in chunks of this size. */
const READ_CHUNK = 1024 * 1024

/** A name the main thread chose: one path segment, never a way out of the area. */
export function segment(name: string): string {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\\') || name.includes('\0')) {
    throw new FsError('EINVAL', 'not a staged upload name')
  }
  return name
}

/** The file of an upload (`file` layout), its folder (`parts`), or one of its parts. */
export function stagedPath(area: string, name: string, part?: string): string {
  return part === undefined ? join(area, segment(name)) : join(area, segment(name), segment(part))
}

/** The files a source names, in order: the upload's one file, or the named parts. */
export function sourceFiles(source: StagedSource): string[] {
  if (!isAbsolute(source.area)) throw new FsError('EINVAL', 'a staging area is an absolute folder')
  return source.parts === undefined ? [stagedPath(source.area, source.id)] : source.parts.map((p) => stagedPath(source.area, source.id, p))
}

/**
 * Opens every file before a byte is read: a part that is gone is ENOENT here, not a
 * stream broken halfway (and once open, a file removed meanwhile still reads whole).
 */
export async function openAll(files: readonly string[]): Promise<fs.FileHandle[]> {
  const handles: fs.FileHandle[] = []
  try {
    for (const f of files) handles.push(await fs.open(f, 'r'))
  } catch (err) {
    await closeAll(handles)
    throw asFsError(err)
  }
  return handles
}

export async function closeAll(handles: readonly fs.FileHandle[]): Promise<void> {
  await Promise.all(handles.map((h) => h.close().catch(() => {})))
}

/**
 * The files' bytes one after the other, each chunk a buffer of its own (a port stream
 * moves it without a copy, a driver may keep it). The caller closes the handles.
 */
export async function* readAll(handles: readonly fs.FileHandle[]): AsyncIterable<Uint8Array> {
  for (const h of handles) {
    for (;;) {
      const buf = Buffer.allocUnsafeSlow(READ_CHUNK)
      let bytesRead: number
      try {
        ;({ bytesRead } = await h.read(buf, 0, READ_CHUNK, null))
      } catch (err) {
        throw asFsError(err)
      }
      if (bytesRead === 0) break
      yield bytesRead === READ_CHUNK ? buf : buf.subarray(0, bytesRead)
    }
  }
}

/** Node errors of the staging disk in the pool's terms: a full disk is ENOSPC (507 at every door). */
export function asFsError(err: unknown): unknown {
  if (isFsError(err)) return err
  const sys = (err as { code?: unknown } | null)?.code
  if (sys === 'ENOSPC' || sys === 'EDQUOT') return new FsError('ENOSPC', "no space left on the server's disk for staged uploads", { cause: err })
  if (sys === 'ENOENT') return new FsError('ENOENT', 'the staged upload is gone', { cause: err })
  if (sys === 'EEXIST') return new FsError('EEXIST', 'the staged upload exists already', { cause: err })
  if (sys === 'ABORT_ERR') return new FsError('ECANCELED', 'cancelled', { cause: err })
  if (typeof sys === 'string' && /^E[A-Z]+$/.test(sys)) return new FsError('EIO', `the staged upload could not be read or written (${sys})`, { cause: err })
  return err
}
