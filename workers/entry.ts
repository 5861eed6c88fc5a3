/**
 * @module workers/entry
 * The pool's task handler: one exhaustive switch on the request's op. Runs in
 * the worker threads; the only default export in the project (piscina needs it).
 *
 * Every request arrives already authorised, with canonical paths inside its
 * session's root. Replies are data: errors are returned as `WireError`s, never
 * thrown, since piscina would strip their codes.
 */
import { type MessagePort, threadId } from 'node:worker_threads'
import type { Driver, OpContext } from '../core/driver.js'
import { FsError, isFsError, toWire } from '../core/errors.js'
import { PROTOCOL_VERSION, type ReadHead, type Reply, type Request, type ZipHead, assertNever, type InlineRead, type RangeSpec } from '../core/messages.js'
import { PortReader, PortWriter } from '../core/port-stream.js'
import { resolveRange } from '../core/range.js'
import { DriverCache } from './driver-cache.js'
import { openTransformed } from './plugins.js'
import { openZip } from './zip.js'
import { listDir, mkdirOne, mkdirp, move, removeTree, touch, writeFile } from './ops.js'

const drivers = new DriverCache()

export default async function handle(msg: Request): Promise<Reply> {
  if (msg.v !== PROTOCOL_VERSION) {
    return { ok: false, error: { code: 'EIO', message: `protocol version ${String(msg.v)} is not ${PROTOCOL_VERSION}`, retryable: false } }
  }
  try {
    const value = await drivers.use(msg.key, msg.backend, (d) => run(d, msg))
    return { ok: true, value }
  } catch (err) {
    if (!isFsError(err)) {
      // A bug: keep the detail here, in this thread's log; the client gets a generic error.
      console.error(JSON.stringify({ level: 'error', thread: threadId, requestId: msg.requestId, op: msg.op, err: String((err as Error)?.stack ?? err) }))
    }
    return { ok: false, error: toWire(err) }
  }
}

async function run(d: Driver, msg: Request): Promise<unknown> {
  const ctx: OpContext = { signal: new AbortController().signal, requestId: msg.requestId }
  switch (msg.op) {
    case 'stat':
      return d.stat(ctx, msg.path)
    case 'list':
      return listDir(ctx, d, msg.path)
    case 'mkdir':
      return (msg.parents ? mkdirp(ctx, d, msg.path, msg.exclusive) : mkdirOne(ctx, d, msg.path, msg.exclusive)).then(() => null)
    case 'rename':
      if (!d.rename) throw new FsError('ENOTSUP', 'this storage cannot rename', { path: msg.from })
      return d.rename(ctx, msg.from, msg.to, { overwrite: msg.overwrite }).then(() => null)
    case 'setMtime':
      if (!d.setMtime) throw new FsError('ENOTSUP', 'this storage cannot set modification times', { path: msg.path })
      return d.setMtime(ctx, msg.path, msg.mtimeMs).then(() => null)
    case 'remove':
      return (msg.recursive ? removeTree(ctx, d, msg.path) : d.remove(ctx, msg.path)).then(() => null)
    case 'move':
      return move(ctx, d, msg.from, msg.to, msg.overwrite).then(() => null)
    case 'touch':
      return touch(ctx, d, msg.path).then(() => null)
    case 'read':
      return produce(msg.port, msg.requestId, async (w, c) => {
        if (msg.transform) {
          // A plugin's transform: the head goes out once the plugin has accepted the file,
          // so its refusals (415, 413...) are still the request's JSON answer.
          const out = await openTransformed(c, d, msg.path, msg.transform)
          w.head({ entry: out.entry, range: null, unsatisfiable: false, transformed: { type: out.type } } satisfies ReadHead)
          return w.pipeFrom(out.body)
        }
        const head = await readHead(c, d, msg.path, msg.range)
        w.head(head)
        if (head.unsatisfiable) return w.end()
        await w.pipeFrom(d.read(c, msg.path, head.range ?? undefined))
      })
    case 'readInline': {
      const head = await readHead(ctx, d, msg.path, msg.range)
      const { range, entry } = head
      const length = head.unsatisfiable ? 0 : range ? range.end - range.start + 1 : entry.size
      if (length > msg.max) return { head, bytes: null } satisfies InlineRead
      const parts: Uint8Array[] = []
      if (length > 0) for await (const chunk of d.read(ctx, msg.path, range ?? undefined)) parts.push(chunk)
      return { head, bytes: parts.length === 1 ? parts[0]! : Buffer.concat(parts) } satisfies InlineRead
    }
    case 'zip':
      return produce(msg.port, msg.requestId, async (w, c) => {
        const zip = await openZip(c, d, msg.paths, { compression: msg.compression })
        w.head({ entries: zip.entries } satisfies ZipHead)
        await w.pipeFrom(zip.body)
      })
    case 'write': {
      const body = new PortReader(msg.port)
      const { overwrite, size, mtimeMs } = msg
      const opts = { overwrite, ...(size === undefined ? {} : { size }), ...(mtimeMs === undefined ? {} : { mtimeMs }) }
      try {
        return await (msg.parents ? writeFile(ctx, d, msg.path, body, opts) : d.write(ctx, msg.path, body, opts))
      } finally {
        body.cancel() // no-op after a complete read; stops the sender when the write failed early
      }
    }
    default:
      return assertNever(msg)
  }
}

/** Stats a file for reading and resolves the requested range against its size. */
async function readHead(ctx: OpContext, d: Driver, path: string, spec: RangeSpec | undefined): Promise<ReadHead> {
  const entry = await d.stat(ctx, path)
  if (entry.kind !== 'file') throw new FsError('EISDIR', `${path}: is a directory`, { path })
  const range = spec ? resolveRange(spec, entry.size) : null
  return { entry, range, unsatisfiable: spec !== undefined && range === null }
}

/** Runs a producing op on its port: its errors go down the stream, and the task resolves when it ends. */
async function produce(port: MessagePort, requestId: string, fn: (w: PortWriter, ctx: OpContext) => Promise<void>): Promise<null> {
  const w = new PortWriter(port)
  // The reader's cancel frame aborts the op: that is how a gone client stops a transfer.
  const ctx: OpContext = { signal: w.signal, requestId }
  try {
    await fn(w, ctx)
  } catch (err) {
    w.fail(err)
    throw err
  }
  return null
}
