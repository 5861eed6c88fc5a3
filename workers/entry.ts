/**
 * @module workers/entry
 * WORKER THREAD. The thread's main: it takes tasks from its channel to the pool
 * (core/messages.ts `ToWorker`), runs each through one exhaustive switch on its op,
 * and answers with a `Reply` (errors as `WireError` data, never thrown across).
 *
 * Every request arrives already authorised, with canonical paths inside its
 * session's root; a path its storage cannot hold (a driver's `refusedNameChars`) is
 * refused here, before the driver sees it. Each task has its own AbortController: a
 * `cancel` from the pool aborts it, so long one-shot ops (a recursive rm, a copy-move
 * of a tree) stop when their caller leaves. Streams outlive their task as actors
 * (workers/transfers.ts).
 */
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { type MessagePort, type Transferable, parentPort, threadId, workerData } from 'node:worker_threads'
import type { Driver, OpContext } from '../core/driver.js'
import { FsError, isFsError, toWire } from '../core/errors.js'
import { type FromWorker, PROTOCOL_VERSION, type RangeSpec, type ReadHead, type ReadStart, type Reply, type Request, type ToWorker, type ZipStart, assertNever } from '../core/messages.js'
import { checkStorable } from '../core/paths.js'
import { PortReader } from '../core/port-stream.js'
import { resolveRange } from '../core/range.js'
import { DriverCache } from './driver-cache.js'
import { openHandle } from './handles/actor.js'
import { hashing } from './hashing.js'
import { abilitiesOf, copyFile, listDir, lstat, makeParentsBelow, mkdirOne, mkdirp, move, removeOne, removeTree, touch, truncateFile, unmakeFolders, writeFile } from './ops.js'
import { openTransformed } from './plugins.js'
import type { PoolWorkerData } from '../core/worker-data.js'
import { startOutgoing, uploadBudget } from './transfers.js'
import { openZip } from './zip.js'
import { runStaged } from './staged/actor.js'
import { commitStaged } from './staged/commit.js'

type Run = Extract<ToWorker, { t: 'run' }>

const port = parentPort
if (!port) throw new Error('workers/entry.ts runs in a pool thread')
const data = workerData as PoolWorkerData | undefined
const drivers = new DriverCache(undefined, data?.backendTimeoutMs === undefined ? {} : { timeoutMs: data.backendTimeoutMs })
const budget = uploadBudget(data)
/** Running tasks' controllers, by task id. */
const running = new Map<number, AbortController>()
/** Tasks waiting for their backend's spec, by key. */
const parked = new Map<string, Run[]>()

port.on('message', (m: ToWorker) => {
  switch (m.t) {
    case 'run': {
      if (m.backend) drivers.register(m.req.key, m.backend)
      if (drivers.knows(m.req.key)) return void runTask(m)
      const waiting = parked.get(m.req.key)
      if (waiting) return void waiting.push(m)
      parked.set(m.req.key, [m])
      return port.postMessage({ t: 'needBackend', key: m.req.key } satisfies FromWorker)
    }
    case 'backend': {
      drivers.register(m.key, m.spec)
      const waiting = parked.get(m.key) ?? []
      parked.delete(m.key)
      for (const r of waiting) void runTask(r)
      return
    }
    case 'cancel':
      return running.get(m.id)?.abort(new FsError('ECANCELED', 'the request was cancelled'))
    case 'staged':
      return void runStagedTask(m)
    default:
      return assertNever(m)
  }
})

async function runTask({ id, req }: Run): Promise<void> {
  const transfer: Transferable[] = []
  const reply = await handle(id, req, transfer)
  port!.postMessage({ t: 'reply', id, reply } satisfies FromWorker, transfer)
}

/** A staged upload's op (workers/staged/actor.ts): no backend, the staging folder. */
async function runStagedTask({ id, req }: Extract<ToWorker, { t: 'staged' }>): Promise<void> {
  const ac = new AbortController()
  running.set(id, ac)
  let reply: Reply
  try {
    reply = { ok: true, value: await runStaged(req, { signal: ac.signal, requestId: `staged-${id}` }, budget) }
  } catch (err) {
    if (!isFsError(err)) console.error(JSON.stringify({ level: 'error', thread: threadId, op: `staged ${req.op}`, err: String((err as Error)?.stack ?? err) }))
    reply = { ok: false, error: toWire(err) }
  } finally {
    running.delete(id)
  }
  port!.postMessage({ t: 'reply', id, reply } satisfies FromWorker)
}

async function handle(id: number, msg: Request, transfer: Transferable[]): Promise<Reply> {
  if (msg.v !== PROTOCOL_VERSION) {
    return { ok: false, error: { code: 'EIO', message: `protocol version ${String(msg.v)} is not ${PROTOCOL_VERSION}`, retryable: false } }
  }
  const ac = new AbortController()
  running.set(id, ac)
  try {
    const held = await drivers.acquire(msg.key)
    let kept = false
    const keep = () => {
      kept = true
      return () => held.release()
    }
    try {
      const temp = (path: string) => port!.postMessage({ t: 'temp', id, path } satisfies FromWorker)
      for (const p of pathsOf(msg)) checkStorable(held.driver.features, p)
      const value = await run(held.driver, msg, { signal: ac.signal, requestId: msg.requestId, temp }, transfer, keep)
      return { ok: true, value }
    } finally {
      if (!kept) held.release()
    }
  } catch (err) {
    if (!isFsError(err)) {
      // A bug: keep the detail here, in this thread's log; the client gets a generic error.
      console.error(JSON.stringify({ level: 'error', thread: threadId, requestId: msg.requestId, op: msg.op, err: String((err as Error)?.stack ?? err) }))
    }
    return { ok: false, error: toWire(err) }
  } finally {
    running.delete(id)
  }
}

/** Every storage path a request names: each must be one its storage can hold. */
function pathsOf(msg: Request): readonly string[] {
  if ('paths' in msg) return msg.paths
  if ('from' in msg) return [msg.from, msg.to]
  return 'path' in msg ? [msg.path] : []
}

/**
 * One op. `transfer` collects what the reply hands over (ports, owned buffers); `keep()`
 * keeps the driver held past the task, for a stream, and returns its release.
 */
async function run(d: Driver, msg: Request, ctx: OpContext, transfer: Transferable[], keep: () => () => void): Promise<unknown> {
  switch (msg.op) {
    case 'stat':
      return d.stat(ctx, msg.path)
    case 'lstat':
      return lstat(ctx, d, msg.path)
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
    case 'setMode':
      if (!d.setMode) throw new FsError('ENOTSUP', 'this storage keeps no permission modes', { path: msg.path })
      return d.setMode(ctx, msg.path, msg.mode).then(() => null)
    case 'truncate':
      return truncateFile(ctx, d, msg.path, msg.size).then(() => null)
    case 'copy':
      return copyFile(ctx, d, msg.from, msg.to, msg.overwrite)
    case 'writeAt':
      if (!d.writeAt) throw new FsError('ENOTSUP', 'this storage cannot write in place', { path: msg.path })
      if (!Number.isSafeInteger(msg.offset) || msg.offset < 0) throw new FsError('EINVAL', 'an offset is a whole number of bytes', { path: msg.path })
      return d.writeAt(ctx, msg.path, msg.offset, msg.data).then(() => null)
    case 'abilities':
      return abilitiesOf(d)
    case 'space':
      if (!d.space) throw new FsError('ENOTSUP', 'this storage does not tell its size and free space', { path: msg.path })
      return d.space(ctx, msg.path)
    case 'remove':
      if (msg.kind) return removeOne(ctx, d, msg.path, msg.kind).then(() => null)
      return (msg.recursive ? removeTree(ctx, d, msg.path) : d.remove(ctx, msg.path)).then(() => null)
    case 'move':
      return move(ctx, d, msg.from, msg.to, msg.overwrite, msg.parents ?? true).then(() => null)
    case 'touch':
      return touch(ctx, d, msg.path, msg.parents ?? true).then(() => null)
    case 'metadata':
      if (!d.metadata) throw new FsError('ENOTSUP', 'this storage keeps no object metadata', { path: msg.path })
      return d.metadata(ctx, msg.path)
    case 'read': {
      const { path, range, transform } = msg
      if (transform) {
        // A plugin's transform: the reply goes out once the plugin has accepted the file,
        // so its refusals (415, 413...) are still the request's JSON answer.
        const s = await startOutgoing(
          ctx,
          async (c) => {
            const out = await openTransformed(c, d, path, transform)
            return { head: { entry: out.entry, range: null, unsatisfiable: false, transformed: { type: out.type } } satisfies ReadHead, body: out.body }
          },
          keep(),
        )
        transfer.push(s.port)
        return { ...s, bytes: null } satisfies ReadStart
      }
      const head = await readHead(ctx, d, path, range)
      const length = head.unsatisfiable ? 0 : head.range ? head.range.end - head.range.start + 1 : head.entry.size
      if (length <= msg.inlineMax) {
        const bytes = length === 0 ? new Uint8Array(0) : await readAll(ctx, d, path, head)
        if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer) transfer.push(bytes.buffer)
        return { head, bytes } satisfies ReadStart
      }
      const s = await startOutgoing(ctx, async (c) => ({ head, body: d.read(c, path, head.range ?? undefined) }), keep())
      transfer.push(s.port)
      return { ...s, bytes: null } satisfies ReadStart
    }
    case 'zip': {
      const s = await startOutgoing(
        ctx,
        async (c) => {
          const zip = await openZip(c, d, msg.paths, { compression: msg.compression })
          return { head: { entries: zip.entries }, body: zip.body }
        },
        keep(),
      )
      transfer.push(s.port)
      return s satisfies ZipStart
    }
    case 'write':
      return write(d, msg, msg.port, ctx)
    case 'commitStaged':
      return commitStaged(ctx, d, msg)
    case 'open':
      return openHandle(ctx, d, msg.path, msg.port, msg.open, keep)
    case 'unstage':
      return unstage(msg.dir, msg.name).then(() => null)
    default:
      return assertNever(msg)
  }
}

async function write(d: Driver, msg: Extract<Request, { op: 'write' }>, p: MessagePort, ctx: OpContext): Promise<unknown> {
  const body = new PortReader(p, { budget })
  // Cancelled (the pool closing, the caller gone): a write waiting for bytes stops too, and the driver removes its temporary file.
  const onAbort = () => body.fail(new FsError('ECANCELED', 'the upload was cancelled'))
  ctx.signal.addEventListener('abort', onAbort, { once: true })
  const { overwrite, size, mtimeMs, metadata, digest, sha256, foldersBelow } = msg
  const opts = { overwrite, ...(size === undefined ? {} : { size }), ...(mtimeMs === undefined ? {} : { mtimeMs }), ...(metadata === undefined ? {} : { metadata }) }
  const hashed = hashing(body, { ...(digest === undefined ? {} : { digest }), ...(sha256 === undefined ? {} : { sha256 }) })
  let made: string[] = []
  try {
    if (msg.parents && foldersBelow !== undefined) made = await makeParentsBelow(ctx, d, msg.path, foldersBelow)
    const entry = await (msg.parents && foldersBelow === undefined ? writeFile(ctx, d, msg.path, hashed.body, opts) : d.write(ctx, msg.path, hashed.body, opts))
    return digest === undefined ? entry : { ...entry, digest: await hashed.digest() }
  } catch (err) {
    // Nothing of a failed write stays, not even the folders made for it (their own context: this one may be cancelled).
    if (made.length > 0) await unmakeFolders({ requestId: ctx.requestId, signal: new AbortController().signal }, d, made)
    throw err
  } finally {
    ctx.signal.removeEventListener('abort', onAbort)
    body.cancel() // no-op after a complete read; stops the sender when the write failed early
  }
}

/** Removes a staging copy a handle left when its thread died: only a name such a copy has. */
async function unstage(dir: string, name: string): Promise<void> {
  if (!/^[0-9a-f]{32}\.staging$/.test(name)) throw new FsError('EINVAL', 'not a staging copy')
  await rm(join(dir, name), { force: true })
}

/** Stats a file for reading and resolves the requested range against its size. */
async function readHead(ctx: OpContext, d: Driver, path: string, spec: RangeSpec | undefined): Promise<ReadHead> {
  const entry = await d.stat(ctx, path)
  if (entry.kind !== 'file') throw new FsError('EISDIR', `${path}: is a directory`, { path })
  const range = spec ? resolveRange(spec, entry.size) : null
  return { entry, range, unsatisfiable: spec !== undefined && range === null }
}

async function readAll(ctx: OpContext, d: Driver, path: string, head: ReadHead): Promise<Uint8Array> {
  const parts: Uint8Array[] = []
  for await (const chunk of d.read(ctx, path, head.range ?? undefined)) parts.push(chunk)
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts)
}
