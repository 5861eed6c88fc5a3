/**
 * @module workers/pool
 * MAIN THREAD. The piscina pool of backend-connection workers.
 *
 * Settings chosen for I/O work (see ARCHITECTURE.md):
 * - `atomics: 'disabled'`: otherwise an idle worker's event loop is frozen between
 *   tasks, and the keep-alives and idle timers of its pooled sessions stall;
 * - several concurrent tasks per worker: tasks wait on I/O, and a streaming task stays
 *   pending for its whole transfer;
 * - a bounded queue, checked before dispatch: piscina's own queue-full error has no
 *   code, so a task that would wait behind `maxQueue` others is refused here as
 *   EUNAVAILABLE (503 at the HTTP edge);
 * - threads live for the pool's lifetime (their driver caches are the point).
 */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { Transferable } from 'node:worker_threads'
import { Piscina } from 'piscina'
import { ApiError } from '../core/api-error.js'
import { FsError, fromWire } from '../core/errors.js'
import type { Reply, Request } from '../core/messages.js'
import type { PluginConfig } from '../core/plugin.js'
import type { PluginWorkerData } from './plugins.js'

export interface PoolOptions {
  readonly workers: number
  readonly tasksPerWorker: number
  readonly maxQueue: number
  /** Enabled plugins: every thread loads them (workers/plugins.ts). */
  readonly plugins?: readonly PluginConfig[]
}

export interface PoolStats {
  readonly threads: number
  readonly running: number
  readonly queued: number
  readonly completed: number
}

/** The worker entry: the compiled .js next to this file, or the .ts source when run from source (tests, tsx). */
function entryFile(): string {
  const js = fileURLToPath(new URL('./entry.js', import.meta.url))
  return existsSync(js) ? js : fileURLToPath(new URL('./entry.ts', import.meta.url))
}

export class WorkerPool {
  readonly #piscina: Piscina
  /** Tasks that may run at once plus those that may wait: beyond it, refuse. */
  readonly #limit: number
  /** Tasks handed to piscina and not yet settled: running and queued. */
  #running = 0
  #closed = false

  constructor(opts: PoolOptions) {
    this.#limit = opts.workers * opts.tasksPerWorker + opts.maxQueue
    this.#piscina = new Piscina({
      filename: entryFile(),
      minThreads: opts.workers,
      maxThreads: opts.workers,
      idleTimeout: Infinity,
      concurrentTasksPerWorker: opts.tasksPerWorker,
      atomics: 'disabled',
      recordTiming: false,
      workerData: { plugins: opts.plugins ?? [] } satisfies PluginWorkerData,
    })
    // Uncaught errors of idle workers: logged by whoever listens; never fatal to the process.
    this.#piscina.on('error', (err: unknown) => console.error(JSON.stringify({ level: 'error', msg: 'worker error', err: String(err) })))
  }

  /**
   * Runs one request. Resolves with the reply value; rejects with the op's own FsError,
   * EIO when the worker thread died under the task, or ApiError UNAVAILABLE when the
   * queue is full or the pool is closing.
   */
  async run<V>(msg: Request, transfer: readonly Transferable[] = []): Promise<V> {
    // The service's own state, not the backend's: UNAVAILABLE (503), never BACKEND_UNREACHABLE.
    if (this.#closed) throw new ApiError('UNAVAILABLE', 'the server is shutting down')
    if (this.#running >= this.#limit) throw new ApiError('UNAVAILABLE', 'the server is overloaded, try again shortly')
    this.#running++
    let reply: Reply<V>
    try {
      reply = await this.#piscina.run(msg, { transferList: transfer as Transferable[] })
    } catch (err) {
      throw new FsError('EIO', 'the worker handling this request stopped', { cause: err })
    } finally {
      this.#running--
    }
    if (!reply.ok) throw fromWire(reply.error)
    return reply.value
  }

  get stats(): PoolStats {
    return { threads: this.#piscina.threads.length, running: this.#running, queued: this.#piscina.queueSize, completed: this.#piscina.completed }
  }

  /** The worker threads, for operations and tests (e.g. terminating one). */
  get threads(): readonly import('node:worker_threads').Worker[] {
    return this.#piscina.threads
  }

  /**
   * Stops every thread. Callers wait for their transfers first (front/main.ts drains
   * HTTP requests up to the shutdown deadline); what still runs then is cut off.
   */
  async close(): Promise<void> {
    this.#closed = true
    await this.#piscina.destroy()
  }
}
