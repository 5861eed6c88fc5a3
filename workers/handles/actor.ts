/**
 * @module workers/handles/actor
 * WORKER THREAD. A protocol gateway's open file as an actor next to the driver (the `open`
 * op, core/messages.ts). The task checks the open as its flags ask and answers the file's
 * entry and the handle's mode; the actor then lives past it, on the port the main thread
 * sent with the task: `ToHandle` calls come in, in order, and go to the handle
 * (handle.ts: read-ahead, coalescing, in-place writes and the staging copy all happen
 * here); `FromHandle` answers go back. It holds the driver until it ends (closed,
 * aborted, or its port closed: the main thread's view went), and nothing else while idle.
 *
 * The main thread keeps watch over it (workers/pool.ts `Started.watch`): if this thread
 * dies, the main side opens a file only read again on another thread, and fails a file
 * that writes (gateways/connection/file-handle.ts); the pool removes the upload's
 * temporary file, announced under the open task's id as every task's are, and another
 * thread the staging copy, whose name is told before the copy is made (`staged`).
 */
import type { MessagePort, Transferable } from 'node:worker_threads'
import type { Driver, Entry, OpContext } from '../../core/driver.js'
import { FsError, fromWire, toWire } from '../../core/errors.js'
import type { FromHandle, HandleFigures, HandleMode, HandleOpen, HandleOpened, ReadHead, Reply, ToHandle } from '../../core/messages.js'
import { parentOf } from '../../core/paths.js'
import { PendingBudget } from '../../core/pending-budget.js'
import type { HeadedStream } from '../../core/view.js'
import { statOrNull, truncateFile } from '../ops.js'
import { asFsError } from './errors.js'
import { Handle } from './handle.js'
import { InPlaceWriter } from './in-place.js'
import { ReadAhead } from './read-ahead.js'
import { type Hold, StagingFile } from './staging.js'
import { WriteCoalescer } from './write-coalescer.js'

/** Opens `path` as `o.flags` ask and starts its actor on `port`. @throws ENOENT | EEXIST | EISDIR | ENOTDIR */
export async function openHandle(task: OpContext, d: Driver, path: string, port: MessagePort, o: HandleOpen, keep: () => () => void): Promise<HandleOpened> {
  const { flags } = o
  try {
    if (path === '/') throw new FsError('EISDIR', '/: is a directory', { path })
    const initial = await statOrNull(task, d, path)
    if (initial?.kind === 'dir') throw new FsError('EISDIR', `${path}: is a directory`, { path })
    if (initial && flags.create && flags.exclusive) throw new FsError('EEXIST', `${path}: already exists`, { path })
    if (!initial) {
      if (!flags.create || !flags.write) throw new FsError('ENOENT', `${path}: no such file`, { path })
      const parent = await statOrNull(task, d, parentOf(path))
      if (!parent) throw new FsError('ENOENT', `${parentOf(path)}: no such directory`, { path: parentOf(path) })
      if (parent.kind !== 'dir') throw new FsError('ENOTDIR', `${parentOf(path)}: not a directory`, { path: parentOf(path) })
    }
    const fresh = flags.write && (initial === null || flags.truncate)
    const mode: HandleMode = !flags.write ? 'read' : fresh && !flags.read ? 'put' : !fresh && o.inPlace && d.writeAt ? 'inPlace' : 'staging'
    new Actor(task, d, path, port, o, initial, mode, keep())
    return { entry: initial, mode }
  } catch (err) {
    port.close()
    throw err
  }
}

class Actor {
  readonly #port: MessagePort
  readonly #handle: Handle
  readonly #life = new AbortController()
  readonly #release: () => void
  /** Quota answers awaited, by id. */
  readonly #holds = new Map<number, { resolve(): void; reject(err: unknown): void }>()
  #nextHold = 1
  #ended = false

  constructor(task: OpContext, d: Driver, path: string, port: MessagePort, o: HandleOpen, initial: Entry | null, mode: HandleMode, release: () => void) {
    this.#port = port
    this.#release = release
    const { flags } = o
    // The handle's own life; the upload's temporary files are announced under the open task's id.
    const ctx: OpContext = { requestId: task.requestId, signal: this.#life.signal, ...(task.temp ? { temp: task.temp } : {}) }
    const fresh = flags.write && (initial === null || flags.truncate)
    // A new file must not replace one created meanwhile (exclusive); a truncated one is replaced.
    const overwrite = !(flags.exclusive && flags.create)
    const upload = (body: AsyncIterable<Uint8Array>, size?: number): Promise<Entry> => d.write(ctx, path, body, { overwrite, ...(size === undefined ? {} : { size }) })
    const reader = new ReadAhead((offset, signal) => this.#stream(ctx, d, path, offset, signal), o.idleMs, () => this.#figures())
    const sizes = { chunkBytes: o.chunkBytes, windowBytes: o.windowBytes, budget: new PendingBudget(o.windowBytes) }
    const writer =
      mode === 'put'
        ? new WriteCoalescer((body) => upload(body), sizes)
        : mode === 'inPlace'
          ? new InPlaceWriter((offset, data) => d.writeAt!(ctx, path, offset, data), initial!.size, sizes)
          : null
    this.#handle = new Handle(path, flags, {
      reader,
      initial,
      writer,
      stage: mode === 'staging' ? (withContent) => this.#stage(o.stagingDir, withContent ? d.read(ctx, path) : null) : null,
      fresh,
      commitStaging: (s) => s.commit(upload),
      truncateNow: (size) => truncateFile(ctx, d, path, size),
      statNow: () => d.stat(ctx, path),
      onEnd: () => this.#end(),
    })
    port.on('message', (m: ToHandle) => this.#take(m))
    // The main side went (its view closed, its process is stopping): nothing is committed.
    port.once('close', () => this.#handle.abort())
  }

  #take(m: ToHandle): void {
    const h = this.#handle
    switch (m.t) {
      case 'read':
        return this.#answer(
          m.id,
          h.read(m.offset, m.length).then((bytes) => {
            // A copy that owns its buffer, moved across: the read-ahead's chunk stays here whole.
            const out = new Uint8Array(bytes.byteLength)
            out.set(bytes)
            return out
          }),
          (v) => [v.buffer as ArrayBuffer],
        )
      case 'write': {
        const bytes = m.data.byteLength
        h.write(m.offset, m.data, { give: m.give }).then(
          () => this.#post({ t: 'taken', bytes, figures: this.#count() }),
          (err: unknown) => this.#post({ t: 'taken', bytes, error: toWire(asFsError(err)), figures: this.#count() }),
        )
        return
      }
      case 'stat':
        return this.#answer(m.id, h.stat())
      case 'truncate':
        return this.#answer(m.id, h.truncate(m.size))
      case 'close':
        return this.#answer(m.id, h.close())
      case 'abort':
        return h.abort()
      case 'held': {
        const w = this.#holds.get(m.id)
        this.#holds.delete(m.id)
        if (m.error) w?.reject(fromWire(m.error))
        else w?.resolve()
        return
      }
    }
  }

  #answer<V>(id: number, p: Promise<V>, transfer?: (v: V) => Transferable[]): void {
    p.then(
      (value) => this.#post({ t: 'done', id, reply: { ok: true, value } satisfies Reply, figures: this.#count() }, transfer?.(value)),
      (err: unknown) => this.#post({ t: 'done', id, reply: { ok: false, error: toWire(asFsError(err)) }, figures: this.#count() }),
    )
  }

  #post(m: FromHandle, transfer?: Transferable[]): void {
    if (this.#ended && m.t !== 'done' && m.t !== 'taken' && m.t !== 'holdRelease') return
    this.#port.postMessage(m, transfer ?? [])
  }

  #count(): HandleFigures {
    const { reader, writer } = this.#handle.parts
    const uploading = writer instanceof WriteCoalescer && writer.uploading
    return { readStreams: reader.started, liveReadStreams: reader.active ? 1 : 0, uploadChunks: writer?.chunksSent ?? 0, uploading }
  }

  #figures(): void {
    if (!this.#ended) this.#post({ t: 'figures', figures: this.#count() })
  }

  /** A read-ahead stream from `offset` to the end, straight from the driver. */
  async #stream(ctx: OpContext, d: Driver, path: string, offset: number, signal: AbortSignal): Promise<HeadedStream<ReadHead>> {
    const c: OpContext = { requestId: ctx.requestId, signal: AbortSignal.any([ctx.signal, signal]) }
    const entry = await d.stat(c, path)
    if (entry.kind !== 'file') throw new FsError('EISDIR', `${path}: is a directory`, { path })
    const unsatisfiable = offset >= entry.size
    const body = unsatisfiable ? (async function* () {})() : d.read(c, path, { start: offset })
    return { head: { entry, range: null, unsatisfiable }, body, cancel: () => {}, live: true }
  }

  #stage(dir: string, content: AsyncIterable<Uint8Array> | null): Promise<StagingFile> {
    return StagingFile.create(dir, content, this.#hold(), (name) => this.#post({ t: 'staged', name }))
  }

  /** The staging bounds' hold, counted on the main thread (core/staging-quota.ts). */
  #hold(): Hold {
    let bytes = 0
    let released = false
    return {
      get bytes() {
        return bytes
      },
      grow: (n) => {
        if (released) return Promise.reject(new FsError('ECANCELED', 'this staged upload is gone'))
        if (n <= 0) return Promise.resolve()
        const id = this.#nextHold++
        return new Promise<void>((resolve, reject) => {
          this.#holds.set(id, { resolve, reject })
          this.#post({ t: 'hold', id, grow: n })
        }).then(() => void (bytes += n))
      },
      setTo: (size) => {
        if (released) return
        bytes = Math.max(0, size)
        this.#post({ t: 'holdSize', size: bytes })
      },
      release: () => {
        if (released) return
        released = true
        this.#post({ t: 'holdRelease' })
      },
    }
  }

  #end(): void {
    if (this.#ended) return
    this.#ended = true
    this.#life.abort(new FsError('ECANCELED', 'the file was closed'))
    for (const w of this.#holds.values()) w.reject(new FsError('ECANCELED', 'the file was closed'))
    this.#holds.clear()
    this.#release()
    // The last answers (close's) are posted first; the port closes once they are out and
    // what the file started in the storage is over: the main side counts the file as a
    // transfer until then, so an aborted upload's temporary file is gone when it stops.
    void this.#handle.settled().then(() => setImmediate(() => this.#port.close()))
  }
}
