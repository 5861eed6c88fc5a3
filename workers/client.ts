/**
 * @module workers/client
 * MAIN THREAD. Encodes calls as typed requests to the worker pool:
 * - `PoolStorage` is the `Storage` that request handlers use;
 * - `RemoteDriver` implements the `Driver` interface over the pool, so the driver
 *   conformance suite runs through the threads too (catching anything that does
 *   not survive the trip, like error codes).
 *
 * Streams: one MessageChannel per transfer; `port2` travels with the task.
 */
import { MessageChannel, type MessagePort } from 'node:worker_threads'
import { type BackendSpec, backendKey } from '../core/backend.js'
import type { ByteRange, Driver, Entry, Features, OpContext, WriteOptions } from '../core/driver.js'
import { FsError, isFsError } from '../core/errors.js'
import { type InlineRead, PROTOCOL_VERSION, type RangeSpec, type ReadHead, type Request, type RequestBody, type TransformRequest, type ZipCompression, type ZipHead } from '../core/messages.js'
import { PortReader, PortWriter } from '../core/port-stream.js'
import type { HeadedStream, RequestContext, Storage } from '../core/storage.js'
import type { WorkerPool } from './pool.js'

/** Reads up to this many bytes are answered inline, in the task's reply. */
export const INLINE_READ_MAX = 64 * 1024

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  if (bytes.byteLength > 0) yield bytes
}

type Body<Op extends RequestBody['op']> = Omit<Extract<RequestBody, { op: Op }>, 'port'>

/** Calls on one backend through the pool. */
class Channel {
  readonly #pool: WorkerPool
  readonly #backend: BackendSpec
  readonly #key: string

  constructor(pool: WorkerPool, backend: BackendSpec, key = backendKey(backend)) {
    this.#pool = pool
    this.#backend = backend
    this.#key = key
  }

  call<V>(ctx: { requestId: string }, body: RequestBody, transfer: MessagePort[] = []): Promise<V> {
    const msg = { v: PROTOCOL_VERSION, requestId: ctx.requestId, backend: this.#backend, key: this.#key, ...body } as Request
    return this.#pool.run<V>(msg, transfer)
  }

  /** A producing op (read, zip): resolves once the head frame arrives, or rejects with the op's error. */
  async download<H>(ctx: RequestContext, body: Body<'read'> | Body<'zip'>): Promise<HeadedStream<H>> {
    const { port1, port2 } = new MessageChannel()
    const reader = new PortReader(port1)
    const task = this.call(ctx, { ...body, port: port2 } as RequestBody, [port2])
    // The task resolves when the stream has ended; its rejection carries the op's error
    // when the worker failed before (or instead of) sending frames, e.g. a dead thread.
    const failed = task.then(
      () => new Promise<never>(() => {}),
      (err: unknown) => Promise.reject(err),
    )
    // Aborting the request cancels the transfer, before or after the head. The listener
    // stays for the stream's life; it dies with the request's signal.
    const onAbort = () => reader.fail(new FsError('ECANCELED', 'the request was cancelled'))
    if (ctx.signal.aborted) onAbort()
    else ctx.signal.addEventListener('abort', onAbort, { once: true })
    try {
      const head = await Promise.race([reader.head<H>(), failed])
      // A later failure (a dead thread) ends the body with that error.
      failed.catch((err: unknown) => reader.fail(isFsError(err) ? err : new FsError('EIO', 'transfer failed')))
      return { head, body: reader, cancel: () => reader.cancel() }
    } catch (err) {
      reader.cancel()
      ctx.signal.removeEventListener('abort', onAbort)
      throw err
    }
  }

  /** A consuming op (write): pumps `source` into the worker with credits. */
  async upload<V>(ctx: RequestContext, body: Body<'write'>, source: AsyncIterable<Uint8Array>): Promise<V> {
    const { port1, port2 } = new MessageChannel()
    const writer = new PortWriter(port1)
    const task = this.call<V>(ctx, { ...body, port: port2 }, [port2])
    writer.pipeFrom(source).catch(() => {
      // Cancelled by the worker (it failed, or finished early): the task's reply tells why.
      // A failing source was already sent down the stream as an error frame.
    })
    try {
      return await task
    } finally {
      // Not waiting for the pump: it may be waiting on a slow client's next bytes, and the
      // answer (say, a 409) must not. Once failed, the writer takes nothing more.
      writer.fail(new FsError('ECANCELED', 'upload stopped')) // no-op once ended
      port1.close()
    }
  }
}

export class PoolStorage implements Storage {
  readonly #ch: Channel

  /** `key`: backendKey(backend), when the caller already has it (a session carries it). */
  constructor(pool: WorkerPool, backend: BackendSpec, key?: string) {
    this.#ch = new Channel(pool, backend, key)
  }

  stat(ctx: RequestContext, path: string): Promise<Entry> {
    return this.#ch.call(ctx, { op: 'stat', path })
  }
  list(ctx: RequestContext, dir: string): Promise<Entry[]> {
    return this.#ch.call(ctx, { op: 'list', path: dir })
  }
  /**
   * Small files come back in the task's reply (measured: a 4 KiB cat cost ~970 µs through
   * a port, ~8 messages); larger ones then stream over a port, an extra round trip that
   * is nothing next to their transfer. Transforms always stream.
   */
  async read(ctx: RequestContext, path: string, range?: RangeSpec, transform?: TransformRequest): Promise<HeadedStream<ReadHead>> {
    if (transform) return this.#ch.download(ctx, { op: 'read', path, transform })
    const r = range ? { range } : {}
    const inline = await this.#ch.call<InlineRead>(ctx, { op: 'readInline', path, max: INLINE_READ_MAX, ...r })
    if (inline.bytes === null) return this.#ch.download(ctx, { op: 'read', path, ...r })
    return { head: inline.head, body: once(inline.bytes), cancel: () => {} }
  }
  write(ctx: RequestContext, path: string, body: AsyncIterable<Uint8Array>, opts: { overwrite: boolean; size?: number }): Promise<Entry> {
    return this.#ch.upload(ctx, { op: 'write', path, parents: true, ...opts }, body)
  }
  mkdir(ctx: RequestContext, dir: string): Promise<void> {
    return this.#ch.call(ctx, { op: 'mkdir', path: dir, parents: true, exclusive: true })
  }
  remove(ctx: RequestContext, path: string): Promise<void> {
    return this.#ch.call(ctx, { op: 'remove', path, recursive: true })
  }
  move(ctx: RequestContext, from: string, to: string, overwrite: boolean): Promise<void> {
    return this.#ch.call(ctx, { op: 'move', from, to, overwrite })
  }
  touch(ctx: RequestContext, path: string): Promise<void> {
    return this.#ch.call(ctx, { op: 'touch', path })
  }
  zip(ctx: RequestContext, paths: readonly string[], compression: ZipCompression): Promise<HeadedStream<ZipHead>> {
    return this.#ch.download(ctx, { op: 'zip', paths, compression })
  }
}

/** The Driver interface over the pool. Features are the local driver's until backends report theirs. */
export class RemoteDriver implements Driver {
  readonly kind: string
  readonly features: Features
  readonly #ch: Channel

  constructor(pool: WorkerPool, backend: BackendSpec, features: Features) {
    this.#ch = new Channel(pool, backend)
    this.kind = `remote:${backend.type}`
    this.features = features
  }

  stat(ctx: OpContext, path: string): Promise<Entry> {
    return this.#ch.call(ctx, { op: 'stat', path })
  }
  async *list(ctx: OpContext, dir: string): AsyncIterable<readonly Entry[]> {
    yield await this.#ch.call<Entry[]>(ctx, { op: 'list', path: dir })
  }
  async *read(ctx: OpContext, path: string, range?: ByteRange): AsyncIterable<Uint8Array> {
    const stream = await this.#ch.download<ReadHead>(ctx, range ? { op: 'read', path, range } : { op: 'read', path })
    yield* stream.body
  }
  write(ctx: OpContext, path: string, body: AsyncIterable<Uint8Array>, opts: WriteOptions = {}): Promise<Entry> {
    return this.#ch.upload(ctx, { op: 'write', path, parents: false, overwrite: opts.overwrite ?? true, ...sizeAndTime(opts) }, abortable(body, ctx.signal))
  }
  mkdir(ctx: OpContext, dir: string): Promise<void> {
    return this.#ch.call(ctx, { op: 'mkdir', path: dir, parents: false, exclusive: false })
  }
  remove(ctx: OpContext, path: string): Promise<void> {
    return this.#ch.call(ctx, { op: 'remove', path, recursive: false })
  }
  rename(ctx: OpContext, from: string, to: string, opts: { overwrite: boolean }): Promise<void> {
    return this.#ch.call(ctx, { op: 'rename', from, to, overwrite: opts.overwrite })
  }
  setMtime(ctx: OpContext, path: string, mtimeMs: number): Promise<void> {
    return this.#ch.call(ctx, { op: 'setMtime', path, mtimeMs })
  }
  async close(): Promise<void> {}
}

function sizeAndTime(o: WriteOptions): { size?: number; mtimeMs?: number } {
  return { ...(o.size === undefined ? {} : { size: o.size }), ...(o.mtimeMs === undefined ? {} : { mtimeMs: o.mtimeMs }) }
}

/** Stops a body when `signal` aborts: the worker then discards the partial write. */
async function* abortable(body: AsyncIterable<Uint8Array>, signal: AbortSignal): AsyncIterable<Uint8Array> {
  for await (const chunk of body) {
    if (signal.aborted) throw new FsError('ECANCELED', 'cancelled')
    yield chunk
  }
  if (signal.aborted) throw new FsError('ECANCELED', 'cancelled')
}
