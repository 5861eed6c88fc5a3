/**
 * @module front/app
 * The composition root: config → state → pool → storages → routes → listener
 * (and, later, gateways). `startFilegate` is what the CLI (front/main.ts), the
 * tests and the benchmarks start.
 */
import { join } from 'node:path'
import { type BackendSpec, backendKey } from '../core/backend.js'
import type { Config } from '../core/config.js'
import type { Gateway, GatewayContext } from '../core/gateway.js'
import type { HttpHandler } from '../core/http.js'
import { StagingQuota } from '../core/staging-quota.js'
import { PoolStaged } from '../workers/client.js'
import { WorkerPool } from '../workers/pool.js'
import { type EngineInfo, listenWith, pickEngine } from './http/engine.js'
import { trustedProxies } from './http/client-address.js'
import type { HttpServer } from './http/exchange.js'
import { type Logger, createLogger } from './log.js'
import { loadPlugins } from './plugins.js'
import { loadOrCreateSecret, readSecretFile } from './server-secret.js'
import { SessionService } from './sessions.js'
import { createHandler } from './server.js'
import { logExposure } from './exposure.js'
import { openState } from './state/open-state.js'
import { AdminService } from './admin.js'
import { GatewayLoginService } from './gateway-login.js'
import { SharedViews } from '../gateways/connection/index.js'
import { chainBearers, sessionBearer } from './gateway-bearer.js'
import { openView, sweepStaging } from '../gateways/connection/index.js'
import type { OpenHttpView } from './access.js'
import { ApiKeyService } from './api-keys.js'
import { S3Keys } from './s3-keys.js'
import { ShareService } from './shares.js'
import { TusUploads } from './tus/uploads.js'
import { DoorMetrics, Drain, TransferLimits } from '../gateways/connection/index.js'
import { version } from './version.js'
import { subkey } from './subkey.js'
import { seal as sealToken, unseal as unsealToken } from '../core/token.js'
import { Metrics } from './metrics.js'
import { createOAuth } from './oauth/index.js'
import { publicOrigin } from './public-url.js'
import { builtInGateways } from './gateways.js'
import { FULL_ACCESS, type Permissions, toBits } from '../core/permissions.js'

export interface Filegate {
  readonly port: number
  readonly pool: WorkerPool
  /** The HTTP engine serving (`http_engine`). */
  readonly http: EngineInfo
  readonly config: Config
  /** The gateways started (the SFTP gateway's `port` tells where it listens). */
  readonly gateways: readonly Gateway[]
  /**
   * Graceful stop: refuses new requests, lets transfers in flight finish for up to
   * `graceMs` (default: the configured shutdown_grace_seconds), then stops the pool.
   */
  close(graceMs?: number): Promise<void>
}

export interface StartOptions {
  readonly logger?: Logger
  readonly gateways?: readonly Gateway[]
}

export async function startFilegate(config: Config, opts: StartOptions = {}): Promise<Filegate> {
  const logger = opts.logger ?? createLogger(config.log.level)
  const http = pickEngine(config.http_engine)
  if (http.fallback) logger.log('warn', http.fallback, { engine: http.engine, node: process.versions.node })
  else logger.log('info', 'HTTP engine', { engine: http.engine, version: http.version, node: process.versions.node })

  // Plugins first: one that fails stops start-up before anything is opened or listening.
  const plugins = await loadPlugins(config.plugins)
  if (config.plugins.length > 0) logger.log('info', 'plugins loaded', { plugins: config.plugins.map((p) => p.name) })

  const stateDir = join(config.data_dir, 'state')
  const secret = config.secret_file === null ? await loadOrCreateSecret(stateDir) : await readSecretFile(config.secret_file)
  const state = await openState(config, stateDir, logger)
  const keys = await ApiKeyService.open(state)
  const admin = await AdminService.open(config.admin_password, secret, state)
  const pool = new WorkerPool({
    workers: config.workers,
    tasksPerWorker: config.tasks_per_worker,
    maxQueue: config.max_queue,
    transfersPerWorker: config.transfers_per_worker,
    bufferBytes: config.transfer_buffer_bytes,
    plugins: plugins.enabled,
    ...(config.backend_timeout_seconds === null ? {} : { backendTimeoutMs: config.backend_timeout_seconds * 1000 }),
  })
  const limits = new TransferLimits({ perAddress: config.transfers_per_address, perCredential: config.transfers_per_credential })
  // Gateways' private staging files (workers/handles/staging.ts writes them): what a crash left is debris.
  const stagingDir = join(config.data_dir, 'gateway-staging')
  await sweepStaging(stagingDir)
  // One count of staged bytes for every door (tus, S3 multipart, the gateways' staging
  // copies), keeping a reserve of free space where the state store is.
  // Staged uploads (tus, S3 multipart parts) are written, measured and read on the pool's threads.
  const staged = new PoolStaged(pool)
  const stagingQuota = new StagingQuota(config.staging_limits, { alsoWatch: [config.data_dir], freeBytes: (dir) => staged.freeBytes(dir) })
  const s3Keys = new S3Keys(state, secret)
  const gatewayLogin = await GatewayLoginService.open({
    config,
    state,
    s3Keys,
    plugins,
    logger,
    openFs: (spec, o) => openView({ pool, spec, permissions: o.permissions, client: o.client, transfers: limits, stagingDir, stagingQuota }),
  })
  // An HTTP caller's view, one per request: what the backend can do is known from the
  // first (no task to open it); the request names its client for the transfer limits.
  const httpView: OpenHttpView = (o) => openView({ pool, ...o, probe: false, transfers: limits, stagingDir, stagingQuota })

  const sessions = await SessionService.open({
    secret,
    config,
    state,
    plugins,
    gatewayLogin,
    probe: async (spec, requestId) => {
      const view = await httpView({ spec, permissions: FULL_ACCESS, login: '' })
      await view.stat({ requestId, signal: new AbortController().signal }, '/')
    },
  })

  // The balancers whose X-Forwarded-For (HTTP) or PROXY header (SFTP) names the client.
  const trustProxy = trustedProxies(config.trust_proxy)
  // The API's address as clients reach it (OAuth issuer, MCP resource): known once the port is.
  const publicUrl = () => publicOrigin(config, server?.port ?? config.port)
  const builtIn = builtInGateways(config, trustProxy, publicUrl)
  const gateways = [...builtIn, ...(opts.gateways ?? []), ...plugins.gateways]
  // Every door's figures on /metrics, and the one drain every door registers with.
  const doors = new DoorMetrics()
  const drain = new Drain()
  const gatewayRoutes: Record<string, HttpHandler> = {}
  for (const g of gateways) Object.assign(gatewayRoutes, g.routes ?? {})
  const started = Date.now()
  const shares = new ShareService({ state, secret, openView: httpView })
  // Bearer credentials (MCP) come once per request: a session's view is opened once and
  // leased to its requests (gateways/connection/shared-views.ts), as S3's signed requests are.
  const bearerViews = new SharedViews({ idleMs: 30_000 })
  const openFs = (spec: BackendSpec, permissions: Permissions) =>
    bearerViews.lease(`${toBits(permissions)}\0${backendKey(spec)}`, () => openView({ pool, spec, permissions, transfers: limits, stagingDir, stagingQuota }))
  const oauth = createOAuth({ config, secret, state, gatewayLogin, issuer: publicUrl, sessions, shares, openFs })
  // What another node may have to finish is staged where every node reaches (`staging_dir`).
  const sharedStaging = config.staging_dir ?? config.data_dir
  const tus = await TusUploads.open({ area: staged.area(join(sharedStaging, 'tus')), state, expiryMs: config.tus.expiry_seconds * 1000, maxSize: config.max_upload_bytes, logger, quota: stagingQuota })
  const handler = createHandler({
    sessions,
    openView: httpView,
    logger,
    gatewayRoutes,
    plugins,
    shares,
    keys,
    corsOrigins: config.cors.origins,
    lsMaxEntries: config.ls_max_entries,
    metrics: {
      meter: new Metrics({
        pool: () => pool.stats,
        sessionsIssued: () => sessions.issued,
        inFlight: () => server?.inFlight ?? 0,
        ...(state.connections ? { stateConnections: state.connections.bind(state) } : {}),
        doors,
      }),
      access: config.metrics,
    },
    tus,
    oauth,
    admin: {
      admin,
      keys,
      state,
      users: gatewayLogin,
      s3Keys,
      status: () => ({
        version,
        uptime_ms: Date.now() - started,
        sessions_issued: sessions.issued,
        transfers_in_flight: server?.inFlight ?? 0,
        pool: pool.stats,
        connections: config.connections.map((c) => ({ label: c.label, type: c.type })),
      }),
    },
    health: () => ({ uptime_ms: Date.now() - started, pool: pool.stats, in_flight: server?.inFlight ?? 0 }),
  })
  let server: HttpServer | undefined
  try {
    server = await listenWith(http, config.host, config.port, {
      handler,
      maxBodyBytes: config.max_upload_bytes,
      trustProxy,
      onRequestDone: (r) => {
        // The route, not the URL path: ids in paths are credentials (front/server.ts).
        if (config.log.requests) logger.log(r.status >= 500 ? 'warn' : 'info', 'request', { ...r, path: handler.routeOf(r.path) })
      },
    })
  } catch (err) {
    tus.close()
    await pool.close()
    await state.close()
    throw err
  }
  const ctx: GatewayContext = {
    login: gatewayLogin,
    state,
    dataDir: config.data_dir,
    stagingDir: sharedStaging,
    stagingQuota,
    staged,
    seal: (purpose, plain) => sealToken(plain, subkey(secret, `gateway:${purpose}`)),
    unseal: (purpose, sealed) => {
      const v = unsealToken(sealed, subkey(secret, `gateway:${purpose}`))
      if (typeof v !== 'string') throw new Error('not a sealed string')
      return v
    },
    openView: (spec, permissions) => openView({ pool, spec, permissions, transfers: limits, stagingDir, stagingQuota }),
    log: (level, msg, fields) => logger.log(level, msg, fields),
    bearer: chainBearers([
      sessionBearer({ sessions, shares, openFs }),
      oauth.bearer,
    ]),
    listenHttp: async (o) => {
      const own = await listenWith(o.exactHeaders && http.engine === 'uws' ? pickEngine('node') : http, o.host, o.port, {
        handler: o.handler,
        maxBodyBytes: o.maxBodyBytes,
        trustProxy,
        ...(o.errorReply ? { errorReply: o.errorReply } : {}),
        onRequestDone: (r) => {
          // Gateways' paths can carry credentials (presigned URLs keep them in the query, never logged).
          if (config.log.requests) logger.log(r.status >= 500 ? 'warn' : 'info', 'request', { ...r, ...(o.routeOf ? { path: o.routeOf(r.path) } : {}), port: own.port })
        },
      })
      const part = drain.register({ name: `http listener :${own.port}`, stopAccepting: () => own.stopListening(), busy: () => own.inFlight, end: () => own.close() })
      return { port: own.port, close: (graceMs) => part.stop(graceMs) }
    },
    meter: (door) => doors.meter(door),
    drain,
  }
  try {
    for (const g of gateways) await g.start(ctx)
  } catch (err) {
    // A gateway that cannot start (e.g. its port is taken) stops start-up, leaving nothing open.
    for (const g of gateways) await g.stop().catch(() => {})
    gatewayLogin.close()
    bearerViews.close()
    server.close()
    tus.close()
    await pool.close()
    await state.close()
    throw err
  }
  logExposure(config, logger)
  logger.log('info', 'filegate listening', { url: `http://${config.host}:${server.port}`, data_dir: config.data_dir, workers: config.workers })

  const srv = server
  drain.register({ name: 'http', stopAccepting: () => srv.stopListening(), busy: () => srv.inFlight, end: () => srv.close() })
  let closing: Promise<void> | null = null
  return {
    port: srv.port,
    pool,
    http,
    config,
    gateways,
    close(graceMs = config.shutdown_grace_seconds * 1000) {
      closing ??= (async () => {
        // The grace's last part (up to 1 s) is kept for what is cut off: cancelled in the
        // worker threads, whose drivers remove their temporary files.
        const settleMs = Math.min(1000, graceMs / 4)
        // Every door at once, to the same deadline (gateways/connection/drain.ts); a
        // gateway's stop then releases what it holds besides (a plugin's gateway, which
        // may not use the drain, gets the same grace).
        const [{ cut }] = await Promise.all([drain.run(graceMs - settleMs), ...gateways.map((g) => g.stop(graceMs - settleMs).catch(() => {}))])
        for (const c of cut) logger.log('warn', 'shutdown deadline reached: cutting transfers off', { door: c.name, in_flight: c.busy })
        gatewayLogin.close()
        bearerViews.close()
        tus.close()
        await pool.close(settleMs)
        await state.close()
      })()
      return closing
    },
  }
}
