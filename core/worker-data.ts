/**
 * @module core/worker-data
 * What the pool (main thread, workers/pool.ts) hands each thread it starts
 * (workers/entry.ts) as `workerData`. Both sides need the shape, and neither may import
 * the other's modules (the thread rule, test/arch.test.ts), so it lives here.
 */
import type { PluginConfig } from './plugin.js'

export interface PoolWorkerData {
  /** The plugins each thread loads (the worker halves; workers/plugins.ts). */
  readonly plugins?: readonly PluginConfig[]
  /** Bytes this thread may buffer for incoming (upload) streams. */
  readonly uploadBufferBytes: number
  /** How long a remote backend may stay silent (config `backend_timeout_seconds`); absent: each driver's default. */
  readonly backendTimeoutMs?: number
}
