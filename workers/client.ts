/**
 * @module workers/client
 * MAIN THREAD. Encodes calls as typed requests to the worker pool:
 * - `Channel` is one backend's calls, what the view every door uses is built on
 *   (gateways/connection/view.ts);
 * - `RemoteDriver` implements the `Driver` interface over the pool, so the driver
 *   conformance suite runs through the threads too (catching anything that does
 *   not survive the trip, like error codes).
 *
 * Streams: a read or zip task answers with the port its worker streams on; an upload
 * sends its port with the task. Every download stream draws on the pool's byte budget.
 */
import { MessageChannel, type MessagePort, type Transferable } from 'node:worker_threads'
import { type BackendSpec, backendKey } from '../core/backend.js'
import type { ByteRange, Driver, Entry, Features, OpContext, Space, WriteOptions } from '../core/driver.js'
import { FsError } from '../core/errors.js'
import { PROTOCOL_VERSION, type ReadHead, type Op, type ReplyOf, type ReplyValues, type Request, type RequestBody, type ZipHead } from '../core/messages.js'
import { PortReader, PortWriter } from '../core/port-stream.js'
import type { HeadedStream } from '../core/view.js'
import type { Started, TransferLease, WorkerPool } from './pool.js'

/** Reads up to this many bytes are answered inline, in the task's reply. */
export const INLINE_READ_MAX = 64 * 1024

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  if (bytes.byteLength > 0) yield bytes
}

type Body<Op extends RequestBody['op']> = Omit<Extract<RequestBody, { op: Op }>, 'port'>

/** Calls on one backend through the pool (what gateways/connection/view.ts builds on). */
export class Channel {
  readonly #pool: WorkerPool
  readonly #backend: BackendSpec
  readonly #key: string

  constructor(pool: WorkerPool, backend: BackendSpec, key = backendKey(backend)) {
    this.#pool = pool
    this.#backend = backend
    this.#key = key
  }

  #msg<B extends { readonly op: Op }>(ctx: { requestId: string }, body: B): Request & B {
    return { v: PROTOCOL_VERSION, requestId: ctx.requestId, key: this.#key, ...body } as Request & B
  }

  /**
   * A one-shot op; aborting `ctx.signal` cancels it in the worker. `transfer`: buffers
   * handed over with it. Resolves with the op's reply value (core/messages.ts `ReplyValues`).
   */
  call<B extends RequestBody>(ctx: OpContext, body: B, transfer?: readonly Transferable[]): Promise<ReplyOf<B>> {
    // The worker answers each op with its `ReplyValues` entry (workers/entry.ts).
    return this.#pool.run(this.#msg(ctx, body), this.#backend, { signal: ctx.signal, ...(transfer ? { transfer } : {}) }) as Promise<ReplyOf<B>>
  }

  /**
   * A one-shot op that moves a file's bytes inside its worker (a staged upload's commit):
   * on the transfer lane, counted as a live transfer of its thread for as long as it runs,
   * so that it holds no task slot the small requests wait for.
   */
  transfer<B extends RequestBody>(ctx: OpContext, body: B): Promise<ReplyOf<B>> {
    return this.#pool.transfer(this.#msg(ctx, body), this.#backend, { signal: ctx.signal }) as Promise<ReplyOf<B>>
  }

  /**
   * A task that starts an actor (a gateway's open file): its value, and the watch or lease
   * that keeps it known on its thread (workers/pool.ts `Started`). `transfer`: its port.
   */
  start<B extends RequestBody>(ctx: OpContext, body: B, transfer: readonly Transferable[]): Promise<Started<ReplyOf<B>>> {
    return this.#pool.start(this.#msg(ctx, body), this.#backend, { signal: ctx.signal, transfer }) as Promise<Started<ReplyOf<B>>>
  }

  /**
   * A read: one task, one stat. Small files come back in the reply; larger ones, and
   * transforms, stream from the actor the task started, counted as a transfer until the
   * stream is over.
   */
  async read(ctx: OpContext, body: Body<'read'>): Promise<HeadedStream<ReadHead>> {
    const started = await this.#pool.start(this.#msg(ctx, body), this.#backend, { signal: ctx.signal })
    const { head, bytes, port } = started.value
    if (bytes !== null) return { head, body: once(bytes), cancel: () => {}, live: false }
    return this.#stream(ctx, head, port!, started)
  }

  async zip(ctx: OpContext, body: Body<'zip'>): Promise<HeadedStream<ZipHead>> {
    const started = await this.#pool.start(this.#msg(ctx, body), this.#backend, { signal: ctx.signal })
    return this.#stream(ctx, started.value.head, started.value.port, started)
  }

  #stream<H>(ctx: OpContext, head: H, port: MessagePort, started: Started<unknown>): HeadedStream<H> {
    let lease: TransferLease | null = null
    const reader = new PortReader(port, { budget: this.#pool.buffers, onClose: () => lease?.release() })
    try {
      lease = started.lease((err) => reader.fail(err))
    } catch (err) {
      reader.cancel() // the thread has its fill of transfers: this one does not start
      throw err
    }
    // Aborting the request cancels the transfer. The listener stays for the stream's life;
    // it dies with the request's signal.
    const onAbort = () => reader.fail(new FsError('ECANCELED', 'the request was cancelled'))
    if (ctx.signal.aborted) onAbort()
    else ctx.signal.addEventListener('abort', onAbort, { once: true })
    return { head, body: reader, cancel: () => reader.cancel(), live: true }
  }

  /** A consuming op (write): a transfer for its whole body; pumps `source` into the worker with credits. */
  async upload(ctx: OpContext, body: Body<'write'>, source: AsyncIterable<Uint8Array>): Promise<ReplyValues['write']> {
    const { port1, port2 } = new MessageChannel()
    const writer = new PortWriter(port1)
    const task = this.#pool.transfer(this.#msg(ctx, { ...body, port: port2 }), this.#backend, { signal: ctx.signal, transfer: [port2] })
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
    yield await this.#ch.call(ctx, { op: 'list', path: dir })
  }
  async *read(ctx: OpContext, path: string, range?: ByteRange): AsyncIterable<Uint8Array> {
    const stream = await this.#ch.read(ctx, { op: 'read', path, inlineMax: INLINE_READ_MAX, ...(range ? { range } : {}) })
    try {
      yield* stream.body
    } finally {
      stream.cancel()
    }
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
  lstat(ctx: OpContext, path: string): Promise<Entry> {
    return this.#ch.call(ctx, { op: 'lstat', path })
  }
  setMode(ctx: OpContext, path: string, mode: number): Promise<void> {
    return this.#ch.call(ctx, { op: 'setMode', path, mode })
  }
  truncate(ctx: OpContext, path: string, size: number): Promise<void> {
    return this.#ch.call(ctx, { op: 'truncate', path, size })
  }
  copy(ctx: OpContext, from: string, to: string, opts: { overwrite: boolean }): Promise<Entry> {
    return this.#ch.call(ctx, { op: 'copy', from, to, overwrite: opts.overwrite })
  }
  space(ctx: OpContext, path: string): Promise<Space> {
    return this.#ch.call(ctx, { op: 'space', path })
  }
  writeAt(ctx: OpContext, path: string, offset: number, data: Uint8Array): Promise<void> {
    return this.#ch.call(ctx, { op: 'writeAt', path, offset, data })
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

/** Staged uploads (tus, S3 multipart parts) over the pool: the main thread's handle on workers/staged/. */
export { PoolStaged } from './staged-client.js'
