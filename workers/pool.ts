/**
 * @module workers/pool
 * MAIN THREAD. The pool of backend-connection worker threads, each with its own
 * channel (core/messages.ts `ToWorker` / `FromWorker`).
 *
 * Two lanes, so that small requests never wait behind transfers:
 * - tasks (stat, list, mkdir, rm, mv..., and the start of a read or zip): at most
 *   `tasksPerWorker` at once per thread, on the least busy one; beyond that they wait
 *   in a bounded queue, and beyond `maxQueue` waiting the answer is EUNAVAILABLE-style
 *   FsError EOVERLOAD (each door answers it: 503 UNAVAILABLE at the HTTP API);
 * - live transfers (a read or zip stream after its start, a write for its whole
 *   body): actors owned by their worker, counted per thread up to
 *   `transfersPerWorker`, placed on the thread with the fewest; they hold no task slot.
 *
 * Backends cross once per thread: a request carries its backend's key, and the spec
 * (credentials included) goes with the first request for that key to that thread, or
 * when the thread asks for it (a replacement thread, a key it evicted).
 *
 * Cancelling a task is a message (`cancel` by id): the worker aborts the op's signal, so
 * a recursive rm or a copy-move stops when its caller leaves. A thread that dies fails
 * its own tasks and transfers only (EIO) and is replaced.
 *
 * Why not piscina (the first design's choice): it cannot tell which thread a task went
 * to, so it cannot place transfers, remember which thread knows which backend, or
 * cancel a task without killing its thread and every pooled session on it.
 *
 * Temporary files: a thread announces each one before its task creates it (an upload's
 * hidden `.part`; `temp` messages). The driver removes it itself when the op fails; when
 * the thread dies first, the pool removes what its unfinished tasks announced, on another
 * thread, so a killed thread leaves no debris.
 */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { type Transferable, Worker } from 'node:worker_threads'
import type { BackendSpec } from '../core/backend.js'
import { FsError, fromWire } from '../core/errors.js'
import type { FromWorker, Reply, ReplyOf, Request, ToWorker } from '../core/messages.js'
import type { PluginConfig } from '../core/plugin.js'
import type { StagedReplies, StagedRequest } from '../core/staged.js'
import { ByteBudget } from '../core/port-stream.js'
import { baseName, isTempUploadName } from '../core/paths.js'
import type { PoolWorkerData } from '../core/worker-data.js'

export interface PoolOptions {
  readonly workers: number
  /** Tasks at once per thread (transfers not included). */
  readonly tasksPerWorker: number
  /** Tasks waiting for a slot beyond which requests are refused. */
  readonly maxQueue: number
  /** Live transfers per thread (default 4096). */
  readonly transfersPerWorker?: number
  /**
   * Bytes buffered for transfers, all together (default 64 MiB): half for downloads on
   * the main thread (`buffers`), half split among the threads for uploads.
   */
  readonly bufferBytes?: number
  /** Enabled plugins: every thread loads them (workers/plugins.ts). */
  readonly plugins?: readonly PluginConfig[]
  /** How long a remote backend may stay silent (absent: each driver's default). */
  readonly backendTimeoutMs?: number
}

export interface PoolStats {
  readonly threads: number
  /** Tasks running on threads. */
  readonly running: number
  /** Tasks waiting for a slot. */
  readonly queued: number
  /** Tasks and transfers finished. */
  readonly completed: number
  /** Live transfers. */
  readonly transfers: number
  /** Bytes the download streams hold on this thread (within `buffers.limit`). */
  readonly bufferedBytes: number
}

export interface RunOptions {
  /** Aborting it cancels the task (before it starts: it never does). */
  readonly signal?: AbortSignal
  readonly transfer?: readonly Transferable[]
}

/** A live transfer on one thread: counted there until released. */
export interface TransferLease {
  release(): void
}

/** A task's value, and a way to keep the stream it started counted as a transfer on its thread. */
export interface Started<V> {
  readonly value: V
  /**
   * Counts the stream on the thread that started it; `onLost` is called if that thread dies
   * first. @throws FsError EOVERLOAD when that thread has `transfersPerWorker` already
   */
  lease(onLost: (err: FsError) => void): TransferLease
  /**
   * Keeps watch over an actor the task started that lives past its reply without moving
   * bytes all the time (a gateway's open file, workers/handles/): not counted as a
   * transfer; `onLost` is called if its thread dies first, and the temporary files it
   * announces under the task's id are removed then, as an unfinished task's are.
   */
  watch(onLost: (err: FsError) => void): TransferLease
}

interface Pending {
  readonly id: number
  /** A backend's op with its spec, or a staged upload's op (core/staged.ts). */
  readonly req: Request | null
  readonly staged: StagedRequest | null
  readonly spec: BackendSpec | null
  readonly transfer: readonly Transferable[]
  readonly lane: 'task' | 'transfer'
  readonly settle: (reply: Reply | null, thread: Thread | null, err?: unknown) => void
  thread: Thread | null
  /** Temporary files the task announced (storage paths): removed if its thread dies under it. */
  readonly temps: string[]
  readonly signal: AbortSignal | undefined
}

interface Thread {
  readonly worker: Worker
  readonly pending: Map<number, Pending>
  /** Backend keys this thread was sent. */
  readonly known: Set<string>
  readonly leases: Set<Lease>
  /** Actors past their task (`Started.watch`), by the id of the task that started them. */
  readonly actors: Map<number, Actor>
  tasks: number
  transfers: number
  dead: boolean
  readonly started: number
}

interface Lease {
  readonly onLost: (err: FsError) => void
}

interface Actor extends Lease {
  /** The task that started it, whose temporary files it goes on announcing. */
  readonly task: Pending
}

/**
 * The thread's script: the compiled entry.js next to this file; or, run from source
 * (tests, tsx), entry.ts through a small CommonJS starter (thread-from-source.cjs).
 */
function threadScript(): string {
  const js = fileURLToPath(new URL('./entry.js', import.meta.url))
  return existsSync(js) ? js : fileURLToPath(new URL('./thread-from-source.cjs', import.meta.url))
}

/** Backend keys remembered per thread. */
const MAX_KNOWN = 10_000
/** Temporary files remembered per task (the latest). */
const MAX_TEMPS = 64

const lost = (cause?: unknown) => new FsError('EIO', 'the worker handling this request stopped', cause === undefined ? {} : { cause })

export class WorkerPool {
  readonly #opts: Required<Omit<PoolOptions, 'plugins' | 'backendTimeoutMs'>> & Pick<PoolOptions, 'backendTimeoutMs'> & { plugins: readonly PluginConfig[] }
  readonly #threads: Thread[] = []
  readonly #queue: Pending[] = []
  readonly #script = threadScript()
  /** Shared by every download stream's reader on this thread. */
  readonly buffers: ByteBudget
  #nextId = 1
  #completed = 0
  #closed = false

  constructor(opts: PoolOptions) {
    this.#opts = { transfersPerWorker: 4096, bufferBytes: 64 * 1024 * 1024, plugins: [], ...opts }
    this.buffers = new ByteBudget(Math.floor(this.#opts.bufferBytes / 2))
    for (let i = 0; i < opts.workers; i++) this.#spawn()
  }

  /**
   * Runs one task. Resolves with the reply value; rejects with the op's own FsError, EIO
   * when the worker thread died under the task, ECANCELED when `signal` aborted it, or
   * FsError EOVERLOAD when the queue is full or the pool is closing.
   */
  async run<R extends Request>(req: R, spec: BackendSpec, opts: RunOptions = {}): Promise<ReplyOf<R>> {
    return (await this.#submit<ReplyOf<R>>(req, spec, 'task', opts)).value
  }

  /** A staged upload's op (workers/staged/): a task, or (`lane: 'transfer'`) a write for its whole body. */
  async staged<Op extends StagedRequest['op']>(req: Extract<StagedRequest, { op: Op }>, opts: RunOptions & { readonly lane?: 'task' | 'transfer' } = {}): Promise<StagedReplies[Op]> {
    return (await this.#submit<StagedReplies[Op]>(req, null, opts.lane ?? 'task', opts)).value
  }

  /** A task that starts a stream: its value, and the lease that counts the stream afterwards. */
  async start<R extends Request>(req: R, spec: BackendSpec, opts: RunOptions = {}): Promise<Started<ReplyOf<R>>> {
    const { value, thread, task } = await this.#submit<ReplyOf<R>>(req, spec, 'task', opts)
    return { value, lease: (onLost) => this.#lease(thread, onLost), watch: (onLost) => this.#watch(thread, task, onLost) }
  }

  /** A transfer for the task's whole life (a write): no task slot, counted as a transfer. */
  async transfer<R extends Request>(req: R, spec: BackendSpec, opts: RunOptions = {}): Promise<ReplyOf<R>> {
    return (await this.#submit<ReplyOf<R>>(req, spec, 'transfer', opts)).value
  }

  get stats(): PoolStats {
    let running = 0
    let transfers = 0
    for (const t of this.#threads) {
      running += t.tasks
      transfers += t.transfers
    }
    return { threads: this.#threads.length, running, queued: this.#queue.length, completed: this.#completed, transfers, bufferedBytes: this.buffers.used }
  }

  /** The worker threads, for operations and tests (e.g. terminating one). */
  get threads(): readonly Worker[] {
    return this.#threads.map((t) => t.worker)
  }

  /**
   * Stops every thread. Callers wait for their transfers first (front/app.ts drains every
   * door up to the shutdown deadline); what still runs then is cancelled, so that drivers
   * remove their temporary files as they stop, and the threads end once their tasks have
   * answered and their transfers are released (a gateway file cut at the deadline holds
   * its lease until its actor has removed the upload's temporary file), or after `settleMs`.
   */
  async close(settleMs = 0): Promise<void> {
    this.#closed = true
    for (const p of this.#queue.splice(0)) p.settle(null, null, new FsError('EOVERLOAD', 'the server is shutting down'))
    for (const t of this.#threads) for (const id of t.pending.keys()) t.worker.postMessage({ t: 'cancel', id } satisfies ToWorker)
    const deadline = performance.now() + settleMs
    while (this.#threads.some((t) => t.pending.size > 0 || t.leases.size > 0) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 10))
    await Promise.all(this.#threads.map((t) => t.worker.terminate()))
  }

  #submit<V>(req: Request | StagedRequest, spec: BackendSpec | null, lane: 'task' | 'transfer', opts: RunOptions): Promise<{ value: V; thread: Thread; task: Pending }> {
    // The service's own state, not the backend's: UNAVAILABLE (503), never BACKEND_UNREACHABLE.
    if (this.#closed) return Promise.reject(new FsError('EOVERLOAD', 'the server is shutting down'))
    if (opts.signal?.aborted) return Promise.reject(new FsError('ECANCELED', 'the request was cancelled'))
    return new Promise((resolve, reject) => {
      const signal = opts.signal
      const onAbort = () => this.#cancel(p)
      const isStaged = spec === null
      const p: Pending = {
        id: this.#nextId++,
        req: isStaged ? null : (req as Request),
        staged: isStaged ? (req as StagedRequest) : null,
        spec,
        lane,
        transfer: opts.transfer ?? [],
        thread: null,
        temps: [],
        signal,
        settle: (reply, thread, err) => {
          signal?.removeEventListener('abort', onAbort)
          if (reply === null || thread === null) return reject(err)
          if (reply.ok) resolve({ value: reply.value as V, thread, task: p })
          else reject(fromWire(reply.error))
        },
      }
      if (lane === 'transfer') {
        const t = this.#leastBy((x) => x.transfers * 1e6 + x.tasks)
        if (!t || t.transfers >= this.#opts.transfersPerWorker) {
          return reject(new FsError('EOVERLOAD', 'the server is overloaded, try again shortly'))
        }
        t.transfers++
        this.#send(t, p)
      } else {
        // The least busy thread; between equals, the one with fewest transfers, since a task
        // may start a stream that stays on its thread.
        const t = this.#leastBy((x) => x.tasks * 1e6 + x.transfers)
        if (t && t.tasks < this.#opts.tasksPerWorker) {
          t.tasks++
          this.#send(t, p)
        } else if (this.#queue.length < this.#opts.maxQueue) {
          this.#queue.push(p)
        } else {
          return reject(new FsError('EOVERLOAD', 'the server is overloaded, try again shortly'))
        }
      }
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  #leastBy(load: (t: Thread) => number): Thread | undefined {
    let best: Thread | undefined
    for (const t of this.#threads) if (!t.dead && (!best || load(t) < load(best))) best = t
    return best
  }

  #send(t: Thread, p: Pending): void {
    p.thread = t
    t.pending.set(p.id, p)
    if (p.req === null) return void t.worker.postMessage({ t: 'staged', id: p.id, req: p.staged! } satisfies ToWorker, p.transfer as Transferable[])
    const key = p.req.key
    const first = !t.known.has(key)
    if (first) {
      // Forgetting is always safe (the spec is sent again): it bounds the set on a long-lived server.
      if (t.known.size >= MAX_KNOWN) t.known.clear()
      t.known.add(key)
    }
    const msg: ToWorker = first && p.spec !== null ? { t: 'run', id: p.id, req: p.req, backend: p.spec } : { t: 'run', id: p.id, req: p.req }
    t.worker.postMessage(msg, p.transfer as Transferable[])
  }

  #cancel(p: Pending): void {
    const q = this.#queue.indexOf(p)
    if (q >= 0) {
      this.#queue.splice(q, 1)
      p.settle(null, null, new FsError('ECANCELED', 'the request was cancelled'))
      return
    }
    if (p.thread && !p.thread.dead && p.thread.pending.has(p.id)) p.thread.worker.postMessage({ t: 'cancel', id: p.id } satisfies ToWorker)
  }

  #onMessage(t: Thread, msg: FromWorker): void {
    if (msg.t === 'temp') {
      const temps = (t.pending.get(msg.id) ?? t.actors.get(msg.id)?.task)?.temps
      if (temps === undefined || !isTempUploadName(baseName(msg.path))) return
      // A task's temporary files come one after another (a tree copied file by file): the last ones may be live.
      if (temps.length >= MAX_TEMPS) temps.shift()
      temps.push(msg.path)
      return
    }
    if (msg.t === 'needBackend') {
      // The thread parked a request for a key it does not know: any pending request for it has the spec.
      for (const p of t.pending.values()) {
        if (p.req?.key === msg.key && p.spec !== null) {
          t.known.add(msg.key)
          t.worker.postMessage({ t: 'backend', key: msg.key, spec: p.spec } satisfies ToWorker)
          return
        }
      }
      return
    }
    const p = t.pending.get(msg.id)
    if (!p) return
    t.pending.delete(msg.id)
    this.#completed++
    this.#free(t, p)
    p.settle(msg.reply, t)
  }

  /** A task or transfer left thread `t`: its slot goes to the next waiting task. */
  #free(t: Thread, p: Pending): void {
    if (p.lane === 'transfer') {
      t.transfers--
      return
    }
    t.tasks--
    this.#drain()
  }

  /** Hands waiting tasks to threads with a free slot. */
  #drain(): void {
    while (this.#queue.length > 0) {
      const target = this.#leastBy((x) => x.tasks * 1e6 + x.transfers)
      if (!target || target.tasks >= this.#opts.tasksPerWorker) return
      target.tasks++
      this.#send(target, this.#queue.shift()!)
    }
  }

  #lease(t: Thread, onLost: (err: FsError) => void): TransferLease {
    const lease: Lease = { onLost }
    if (t.dead) {
      queueMicrotask(() => onLost(lost()))
      return { release() {} }
    }
    if (t.transfers >= this.#opts.transfersPerWorker) throw new FsError('EOVERLOAD', 'the server is overloaded, try again shortly')
    t.transfers++
    t.leases.add(lease)
    return {
      release: () => {
        if (!t.leases.delete(lease)) return
        t.transfers--
        this.#completed++
      },
    }
  }

  #watch(t: Thread, task: Pending, onLost: (err: FsError) => void): TransferLease {
    if (t.dead) {
      queueMicrotask(() => onLost(lost()))
      return { release() {} }
    }
    task.temps.length = 0 // the task finished well: its own temporary files are settled
    t.actors.set(task.id, { onLost, task })
    return { release: () => void t.actors.delete(task.id) }
  }

  /** Removes a temporary file a dead thread's task announced, on a live thread; gone already is fine. */
  #removeTemp(p: Pending, path: string): void {
    if (this.#closed || p.req === null || p.spec === null) return
    const req: Request = { v: p.req.v, requestId: p.req.requestId, key: p.req.key, op: 'remove', path, recursive: false, kind: 'file' }
    this.run(req, p.spec).catch(() => {})
  }

  #spawn(): void {
    const worker = new Worker(this.#script, {
      workerData: {
        plugins: this.#opts.plugins,
        uploadBufferBytes: Math.floor(this.#opts.bufferBytes / 2 / this.#opts.workers),
        ...(this.#opts.backendTimeoutMs === undefined ? {} : { backendTimeoutMs: this.#opts.backendTimeoutMs }),
      } satisfies PoolWorkerData,
    })
    const t: Thread = { worker, pending: new Map(), known: new Set(), leases: new Set(), actors: new Map(), tasks: 0, transfers: 0, dead: false, started: performance.now() }
    this.#threads.push(t)
    worker.on('message', (m: FromWorker) => this.#onMessage(t, m))
    // Uncaught errors of a thread: logged; the thread exits and is replaced below.
    worker.on('error', (err: unknown) => console.error(JSON.stringify({ level: 'error', msg: 'worker error', err: String(err) })))
    worker.once('exit', () => this.#onExit(t))
    this.#drain()
  }

  #onExit(t: Thread): void {
    t.dead = true
    this.#threads.splice(this.#threads.indexOf(t), 1)
    // A thread that dies as it starts (a broken plugin, say) is replaced after a pause, not in a loop.
    if (!this.#closed) {
      if (performance.now() - t.started > 1000) this.#spawn()
      else setTimeout(() => !this.#closed && this.#spawn(), 1000).unref()
    }
    const err = lost()
    for (const p of t.pending.values()) {
      this.#free(t, p)
      p.settle(null, null, err)
      for (const path of p.temps) this.#removeTemp(p, path)
    }
    t.pending.clear()
    for (const l of t.leases) l.onLost(err)
    t.leases.clear()
    for (const a of t.actors.values()) {
      for (const path of a.task.temps) this.#removeTemp(a.task, path)
      a.onLost(err)
    }
    t.actors.clear()
    t.transfers = 0
  }
}
