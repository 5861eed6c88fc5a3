/**
 * @module workers/staged/commit
 * WORKER THREAD. A staged upload (core/staged.ts) committed into a storage in one task,
 * the `commitStaged` op (core/messages.ts), on the thread that holds the target's
 * driver: its files are opened first (one gone: the answer is null, nothing is written),
 * then read in order straight from the staging folder and written through the driver's
 * atomic write, as an upload's bytes are. The main thread sends the names and gets the
 * entry: no staged byte crosses to it. A storage that can take one staged file as it is
 * (`Driver.adopt`: a local folder on the staging disk, by a hard link) gets the file
 * itself, no byte copied and no room needed for a second copy; where it cannot (another
 * file system), the bytes are written.
 *
 * The staged files are only read here. What becomes of them is the door's business:
 * removed once it has recorded the commit, kept for a retry when the commit failed
 * (also when this thread died under it: the pool then removes the write's temporary
 * file at the target, as for any upload).
 */
import type { Driver, Entry, OpContext, WriteOptions } from '../../core/driver.js'
import { FsError, isFsError } from '../../core/errors.js'
import type { Request } from '../../core/messages.js'
import { ensureParent } from '../ops.js'
import { closeAll, openAll, readAll, sourceFiles } from './files.js'

type Commit = Extract<Request, { op: 'commitStaged' }>

export async function commitStaged(ctx: OpContext, d: Driver, msg: Commit): Promise<Entry | null> {
  const files = sourceFiles(msg.source)
  let handles
  try {
    handles = await openAll(files)
  } catch (err) {
    if (isFsError(err) && err.code === 'ENOENT') return null // aborted or swept meanwhile
    throw err
  }
  try {
    const { overwrite, size, metadata } = msg
    const opts: WriteOptions = { overwrite, ...(size === undefined ? {} : { size }), ...(metadata === undefined ? {} : { metadata }) }
    if (msg.path === '/') throw new FsError('EISDIR', '/: is a directory', { path: msg.path })
    if (msg.parents) await ensureParent(ctx, d, msg.path)
    if (d.adopt && files.length === 1 && metadata === undefined) {
      // One file where the storage can take it as it is (a local folder on the staging disk): no byte copied.
      const held = (await handles[0]!.stat()).size
      if (size !== undefined && held !== size) throw mismatch(held, size)
      try {
        return await d.adopt(ctx, msg.path, files[0]!, opts)
      } catch (err) {
        if (!isFsError(err) || err.code !== 'ENOTSUP') throw err
      }
    }
    return await d.write(ctx, msg.path, sized(readAll(handles), size), opts)
  } finally {
    await closeAll(handles)
  }
}

const mismatch = (held: number, size: number) => new FsError('EIO', `the staged upload holds ${held > size ? 'more' : 'fewer'} bytes than the ${size} recorded`)

/** The bytes, checked against the size the door recorded: any other count fails the write before it is committed. */
async function* sized(body: AsyncIterable<Uint8Array>, size: number | undefined): AsyncIterable<Uint8Array> {
  let n = 0
  for await (const chunk of body) {
    n += chunk.byteLength
    if (size !== undefined && n > size) break
    yield chunk
  }
  if (size !== undefined && n !== size) throw mismatch(n, size)
}
