/**
 * @module front/gateway-context
 * What every gateway is started with (core/gateway.ts, `GatewayContext`), the built-in
 * ones and plugins' alike: the logins, the views, the state store, the staging areas,
 * the server secret's seals, an HTTP listener of its own on the API's engine, its
 * counters on /metrics and its share of the one shutdown drain.
 */
import type { Config } from '../core/config.js'
import type { GatewayContext } from '../core/gateway.js'
import { seal as sealToken, unseal as unsealToken } from '../core/token.js'
import type { DoorMetrics, Drain } from '../gateways/connection/index.js'
import { type EngineInfo, listenWith, pickEngine } from './http/engine.js'
import type { Logger } from './log.js'
import type { Services } from './services.js'
import type { Stores } from './stores.js'
import { subkey } from './subkey.js'
import type { Views } from './views.js'

export interface GatewayContextDeps {
  readonly config: Config
  readonly logger: Logger
  readonly http: EngineInfo
  /** The balancers whose X-Forwarded-For names the client. */
  readonly trustProxy: ReadonlySet<string>
  readonly stores: Stores
  readonly views: Views
  readonly services: Services
  readonly doors: DoorMetrics
  readonly drain: Drain
}

export function gatewayContext({ config, logger, http, trustProxy, stores, views, services, doors, drain }: GatewayContextDeps): GatewayContext {
  const { secret, state } = stores
  return {
    login: services.gatewayLogin,
    state,
    dataDir: config.data_dir,
    stagingDir: views.sharedStaging,
    stagingQuota: views.stagingQuota,
    staged: views.staged,
    seal: (purpose, plain) => sealToken(plain, subkey(secret, `gateway:${purpose}`)),
    unseal: (purpose, sealed) => {
      const v = unsealToken(sealed, subkey(secret, `gateway:${purpose}`))
      if (typeof v !== 'string') throw new Error('not a sealed string')
      return v
    },
    openView: (spec, permissions) => views.open(spec, permissions),
    log: (level, msg, fields) => logger.log(level, msg, fields),
    bearer: services.bearer,
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
}
