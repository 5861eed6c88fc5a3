/**
 * @module front/app
 * The composition root: `startFilegate` is what the CLI (front/main.ts), the tests and
 * the benchmarks start. In order: the plugins (one that fails stops start-up before
 * anything is open), the secret and the state store (front/stores.ts), the worker pool
 * and its views (front/views.ts), the logins and what they lead to (front/services.ts),
 * the HTTP API's handler and listener, then the gateways, each with its context
 * (front/gateway-context.ts). `close` drains every door at once, then releases the rest.
 */
import type { Config } from '../core/config.js'
import type { Gateway } from '../core/gateway.js'
import type { HttpHandler } from '../core/http.js'
import { DoorMetrics, Drain } from '../gateways/connection/index.js'
import type { WorkerPool } from '../workers/pool.js'
import { logExposure } from './exposure.js'
import { gatewayContext } from './gateway-context.js'
import { builtInGateways } from './gateways.js'
import { trustedProxies } from './http/client-address.js'
import { type EngineInfo, listenWith, pickEngine } from './http/engine.js'
import type { HttpServer } from './http/exchange.js'
import { type Logger, createLogger } from './log.js'
import { Metrics } from './metrics.js'
import { type PluginHost, loadPlugins } from './plugins.js'
import { publicOrigin } from './public-url.js'
import { type Handler, createHandler } from './server.js'
import { type Services, openServices } from './services.js'
import { type Stores, openStores } from './stores.js'
import { version } from './version.js'
import { type Views, openViews } from './views.js'

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

  const stores = await openStores(config, logger)
  const views = await openViews(config, plugins)
  // The API's listener, once it listens: what is asked before then (its port, its requests) has a default.
  let server: HttpServer | undefined
  // The API's address as clients reach it (OAuth issuer, MCP resource): known once the port is.
  const publicUrl = () => publicOrigin(config, server?.port ?? config.port)
  const services = await openServices({ config, logger, plugins, stores, views, publicUrl })
  // The balancers whose X-Forwarded-For (HTTP) or PROXY header (SFTP) names the client.
  const trustProxy = trustedProxies(config.trust_proxy)
  const gateways = [...builtInGateways(config, trustProxy, publicUrl), ...(opts.gateways ?? []), ...plugins.gateways]
  // Every door's figures on /metrics, and the one drain every door registers with.
  const doors = new DoorMetrics()
  const drain = new Drain()
  // What is open besides the listeners, released in this order on a failed start-up and at the
  // end of a shutdown: the views shared by logins and by bearer credentials, the uploads'
  // expiry sweep, the pool (giving what was cut off `settleMs` to settle), the state store.
  const release = async (settleMs?: number) => {
    services.close()
    await views.close(settleMs)
    await stores.state.close()
  }

  const handler = apiHandler({ config, logger, plugins, stores, views, services, gateways, doors, inFlight: () => server?.inFlight ?? 0 })
  try {
    server = await listenApi(config, logger, http, trustProxy, handler)
  } catch (err) {
    await release()
    throw err
  }
  const api = server
  const ctx = gatewayContext({ config, logger, http, trustProxy, stores, views, services, doors, drain })
  try {
    for (const g of gateways) await g.start(ctx)
  } catch (err) {
    // A gateway that cannot start (e.g. its port is taken) stops start-up, leaving nothing open.
    for (const g of gateways) await g.stop().catch(() => {})
    api.close()
    await release()
    throw err
  }
  logExposure(config, logger)
  logger.log('info', 'filegate listening', { url: `http://${config.host}:${api.port}`, data_dir: config.data_dir, workers: config.workers })
  drain.register({ name: 'http', stopAccepting: () => api.stopListening(), busy: () => api.inFlight, end: () => api.close() })

  let closing: Promise<void> | null = null
  return {
    port: api.port,
    pool: views.pool,
    http,
    config,
    gateways,
    close(graceMs = config.shutdown_grace_seconds * 1000) {
      closing ??= shutdown(graceMs, { logger, drain, gateways, release })
      return closing
    },
  }
}

/** The HTTP API's routes (front/server.ts) with the gateways' routes on the same port, its metrics, admin API and health. */
function apiHandler(o: {
  readonly config: Config
  readonly logger: Logger
  readonly plugins: PluginHost
  readonly stores: Stores
  readonly views: Views
  readonly services: Services
  readonly gateways: readonly Gateway[]
  readonly doors: DoorMetrics
  /** Requests the API's listener is answering (0 until it listens). */
  readonly inFlight: () => number
}): Handler {
  const { config, stores, views, services } = o
  const { state, keys } = stores
  const { pool } = views
  const { sessions } = services
  const gatewayRoutes: Record<string, HttpHandler> = {}
  for (const g of o.gateways) Object.assign(gatewayRoutes, g.routes ?? {})
  const started = Date.now()
  return createHandler({
    sessions,
    openView: views.http,
    logger: o.logger,
    gatewayRoutes,
    plugins: o.plugins,
    shares: services.shares,
    keys,
    corsOrigins: config.cors.origins,
    lsMaxEntries: config.ls_max_entries,
    metrics: {
      meter: new Metrics({
        pool: () => pool.stats,
        sessionsIssued: () => sessions.issued,
        inFlight: o.inFlight,
        ...(state.connections ? { stateConnections: state.connections.bind(state) } : {}),
        doors: o.doors,
      }),
      access: config.metrics,
    },
    tus: services.tus,
    oauth: services.oauth,
    admin: {
      admin: stores.admin,
      keys,
      state,
      users: services.gatewayLogin,
      s3Keys: stores.s3Keys,
      status: () => ({
        version,
        uptime_ms: Date.now() - started,
        sessions_issued: sessions.issued,
        transfers_in_flight: o.inFlight(),
        pool: pool.stats,
        connections: config.connections.map((c) => ({ label: c.label, type: c.type })),
      }),
    },
    health: () => ({ uptime_ms: Date.now() - started, pool: pool.stats, in_flight: o.inFlight() }),
  })
}

/** The HTTP API's listener, with the request log (`log.requests`). */
function listenApi(config: Config, logger: Logger, http: EngineInfo, trustProxy: ReadonlySet<string>, handler: Handler): Promise<HttpServer> {
  return listenWith(http, config.host, config.port, {
    handler,
    maxBodyBytes: config.max_upload_bytes,
    trustProxy,
    onRequestDone: (r) => {
      // The route, not the URL path: ids in paths are credentials (front/server.ts).
      if (config.log.requests) logger.log(r.status >= 500 ? 'warn' : 'info', 'request', { ...r, path: handler.routeOf(r.path) })
    },
  })
}

/**
 * Every door at once, to the same deadline (gateways/connection/drain.ts); a gateway's
 * stop then releases what it holds besides (a plugin's gateway, which may not use the
 * drain, gets the same grace). Then the logins, the pool and the state store go.
 */
async function shutdown(graceMs: number, o: { readonly logger: Logger; readonly drain: Drain; readonly gateways: readonly Gateway[]; readonly release: (settleMs: number) => Promise<void> }): Promise<void> {
  // The grace's last part (up to 1 s) is kept for what is cut off: cancelled in the
  // worker threads, whose drivers remove their temporary files.
  const settleMs = Math.min(1000, graceMs / 4)
  const [{ cut }] = await Promise.all([o.drain.run(graceMs - settleMs), ...o.gateways.map((g) => g.stop(graceMs - settleMs).catch(() => {}))])
  for (const c of cut) o.logger.log('warn', 'shutdown deadline reached: cutting transfers off', { door: c.name, in_flight: c.busy })
  await o.release(settleMs)
}
