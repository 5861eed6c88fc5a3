/**
 * @module front/views
 * The worker pool and the views every door opens over it (gateways/connection/view.ts).
 * Each view counts its transfers against the service's fairness limits, stages its
 * copies in the gateways' private staging folder and its bytes against the one count of
 * staged bytes (core/staging-quota.ts); what differs between doors is how a view is
 * opened: a login's once, probing the backend; an HTTP request's per request, with no
 * probe; a bearer credential's (MCP) leased to each of its session's requests.
 */
import { join } from 'node:path'
import { type BackendSpec, backendKey } from '../core/backend.js'
import type { Config } from '../core/config.js'
import type { ClientIdentity } from '../core/request-context.js'
import { type Permissions, toBits } from '../core/permissions.js'
import { StagingQuota } from '../core/staging-quota.js'
import type { View } from '../core/view.js'
import { SharedViews, TransferLimits, openView, sweepStaging } from '../gateways/connection/index.js'
import { PoolStaged } from '../workers/client.js'
import { WorkerPool } from '../workers/pool.js'
import type { OpenHttpView } from './access.js'
import type { PluginHost } from './plugins.js'

export interface Views {
  readonly pool: WorkerPool
  /** Staged uploads (tus, S3 multipart parts), written, measured and read on the pool's threads. */
  readonly staged: PoolStaged
  /** One count of staged bytes for every door (tus, S3 multipart, the gateways' staging copies). */
  readonly stagingQuota: StagingQuota
  /** Where what another node may have to finish is staged: `staging_dir`, in a cluster a folder every node reaches (default: the data folder). */
  readonly sharedStaging: string
  /** A view that asks a worker what the backend can do first (a gateway login's, a plugin's gateway's). */
  open(spec: BackendSpec, permissions: Permissions, client?: ClientIdentity): Promise<View>
  /** An HTTP caller's view, one per request: what the backend can do is known from the first (no task to open it). */
  readonly http: OpenHttpView
  /**
   * A bearer credential's view (MCP): it comes once per request, so a session's view is
   * opened once and leased to its requests (gateways/connection/shared-views.ts), as S3's
   * signed requests' are.
   */
  bearer(spec: BackendSpec, permissions: Permissions): Promise<View>
  /** Ends the leased views and stops the pool, giving work cut off `settleMs` to settle. */
  close(settleMs?: number): Promise<void>
}

export async function openViews(config: Config, plugins: PluginHost): Promise<Views> {
  // The gateways' private staging files (workers/handles/staging.ts writes them): what a crash left is debris.
  const stagingDir = join(config.data_dir, 'gateway-staging')
  await sweepStaging(stagingDir)
  const pool = new WorkerPool({
    workers: config.workers,
    tasksPerWorker: config.tasks_per_worker,
    maxQueue: config.max_queue,
    transfersPerWorker: config.transfers_per_worker,
    bufferBytes: config.transfer_buffer_bytes,
    plugins: plugins.enabled,
    ...(config.backend_timeout_seconds === null ? {} : { backendTimeoutMs: config.backend_timeout_seconds * 1000 }),
  })
  const transfers = new TransferLimits({ perAddress: config.transfers_per_address, perCredential: config.transfers_per_credential })
  const staged = new PoolStaged(pool)
  // The staged bytes keep a reserve of free space where the state store is.
  const stagingQuota = new StagingQuota(config.staging_limits, { alsoWatch: [config.data_dir], freeBytes: (dir) => staged.freeBytes(dir) })
  const shared = { pool, transfers, stagingDir, stagingQuota }
  const open = (spec: BackendSpec, permissions: Permissions, client?: ClientIdentity) => openView({ ...shared, spec, permissions, ...(client ? { client } : {}) })
  const bearerViews = new SharedViews({ idleMs: 30_000 })
  return {
    pool,
    staged,
    stagingQuota,
    sharedStaging: config.staging_dir ?? config.data_dir,
    open,
    http: (o) => openView({ ...shared, ...o, probe: false }),
    bearer: (spec, permissions) => bearerViews.lease(`${toBits(permissions)}\0${backendKey(spec)}`, () => open(spec, permissions)),
    async close(settleMs) {
      bearerViews.close()
      await pool.close(settleMs)
    },
  }
}
