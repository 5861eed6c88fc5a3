/**
 * @module front/server
 * The route table and the request pipeline: route → authenticate → handler, with
 * every error turned into the contract's envelope in one place.
 */
import { ApiError } from '../core/api-error.js'
import { isFsError } from '../core/errors.js'
import type { HttpHandler, HttpReply, HttpRequest } from '../core/http.js'
import type { PluginRoute } from '../core/plugin.js'
import { type Access, type OpenHttpView, sessionPermissions } from './access.js'
import { readJson } from './http/body.js'
import { errorReply, okReply } from './http/status.js'
import * as files from './routes/files.js'
import type { Logger } from './log.js'
import { NO_PLUGINS, type PluginHost } from './plugins.js'
import type { SessionService } from './sessions.js'
import type { ShareService } from './shares.js'
import type { ApiKeyService } from './api-keys.js'
import { OPEN_CORS, corsHeaders, openPreflight, preflight, withCors } from './cors.js'
import type { OAuthServer } from './oauth/index.js'
import { type AdminDeps, adminPattern, adminRoute } from './routes/admin.js'
import { shareRoute } from './routes/share.js'
import { webPattern, webRoute } from './routes/web.js'
import type { Config } from '../core/config.js'
import type { Metrics } from './metrics.js'
import { metricsRoute } from './routes/metrics.js'
import { openapiDocument } from './routes/openapi.js'
import { type TusUploads, isTusPath, tusReply } from './tus/uploads.js'

export interface ServerDeps {
  readonly sessions: SessionService
  /** A caller's view (with the transfer limits). */
  readonly openView: OpenHttpView
  readonly health: () => Record<string, unknown>
  /** Routes that gateways register, by exact path; they answer every method. */
  readonly gatewayRoutes?: Readonly<Record<string, HttpHandler>>
  /** Enabled plugins: their routes under /plugins/<name>/ and their download transforms. */
  readonly plugins?: PluginHost
  readonly logger: Logger
  readonly shares: ShareService
  readonly keys: ApiKeyService
  /** The admin API and console; absent: /admin is not served. */
  readonly admin?: AdminDeps
  /** Entries one `ls` answer holds at most (`ls_max_entries`); larger folders are asked for in pages. */
  readonly lsMaxEntries?: number
  /** Origins from the configuration (`cors.origins`); each API key adds its own. */
  readonly corsOrigins: readonly string[]
  /** Counts every request and serves GET /metrics to the callers `access` allows. */
  readonly metrics?: { readonly meter: Metrics; readonly access: Config['metrics'] }
  /** Resumable uploads under /api/files/tus/; absent: not served. */
  readonly tus?: TusUploads
  /** The OAuth authorization server of the MCP gateway (front/oauth/); absent: not served. */
  readonly oauth?: Pick<OAuthServer, 'routes' | 'openCors'>
}

type Route = Partial<Record<string, (req: HttpRequest) => Promise<HttpReply>>>

/**
 * The request handler, and `routeOf`: the route a URL path matches, as the request
 * log and the metrics show it. Ids in paths are bearer credentials (a share id is a
 * link), so a route is its pattern (`/api/share/{id}`), never the id, and `unmatched`
 * for a path that matches no route (it could hold anything).
 */
export type Handler = HttpHandler & { routeOf(path: string): string }

export function createHandler(deps: ServerDeps): Handler {
  const routes = routeTable(deps)
  const configured = new Set(deps.corsOrigins)
  const allowed = (origin: string) => configured.has(origin) || deps.keys.hasOrigin(origin)
  const handle = dispatch(deps, routes)
  const answer: HttpHandler = async (req) => {
    if (deps.oauth?.openCors.has(req.path)) return req.method === 'OPTIONS' ? openPreflight() : withCors(await handle(req), OPEN_CORS)
    if (req.method === 'OPTIONS') return deps.tus && isTusPath(req.path) ? deps.tus.options(preflight(req, allowed)) : preflight(req, allowed)
    return withCors(await handle(req), corsHeaders(req, allowed))
  }
  const routeOf = (raw: string): string => {
    const path = raw.length > 1 ? raw.replace(/\/+$/, '') : raw
    if (Object.hasOwn(routes, path) || (deps.gatewayRoutes && Object.hasOwn(deps.gatewayRoutes, path))) return path
    if (path.startsWith('/api/share/')) return '/api/share/{id}'
    if (deps.tus && isTusPath(path)) return path === '/api/files/tus' ? path : '/api/files/tus/{id}'
    return (deps.admin && adminPattern(path)) || webPattern(path) || 'unmatched'
  }
  const meter = deps.metrics?.meter
  const isGateway = (route: string) => deps.gatewayRoutes !== undefined && Object.hasOwn(deps.gatewayRoutes, route)
  const handler: HttpHandler = meter
    ? (req) => {
        const route = routeOf(req.path)
        return meter.observe(req, route, answer, isGateway(route))
      }
    : answer
  return Object.assign(handler, { routeOf })
}

/** Path → method → handler: the exact paths the API answers (shares by id and the admin's are matched in dispatch). */
function routeTable(deps: ServerDeps): Record<string, Route> {
  const plugins = deps.plugins ?? NO_PLUGINS
  const download: files.FileHandler = (req, access) => files.download(req, access, plugins)
  const meter = deps.metrics?.meter
  const authed =
    (fn: files.FileHandler) =>
    async (req: HttpRequest): Promise<HttpReply> => {
      const access = await authenticate(deps, req)
      return meter ? meter.transfer(access.session.spec.type, req, (r) => fn(r, access)) : fn(req, access)
    }

  const routes: Record<string, Route> = {
    '/api/session': {
      POST: async (req) => {
        const { session, token } = await deps.sessions.create(await readJson(req), req.requestId, req.remoteAddress)
        return okReply({ result: { home: session.home, is_authenticated: true, backendID: session.backendID, authorization: token } })
      },
      // The token's own session: a share link or API key is not a session.
      GET: async (req) => {
        const session = await deps.sessions.authenticate(req.header('authorization'))
        return okReply({ result: { home: session.home, is_authenticated: true, backendID: session.backendID } })
      },
      DELETE: async (req) => {
        const session = await deps.sessions.authenticate(req.header('authorization'))
        await deps.sessions.revoke(session)
        return okReply()
      },
    },
    '/api/files/ls': { GET: authed((req, access) => files.ls(req, access, { max: deps.lsMaxEntries ?? files.LS_MAX_ENTRIES })) },
    '/api/files/cat': { GET: authed(download), HEAD: authed(download), POST: authed(files.upload) },
    '/api/files/zip': { GET: authed(files.zip) },
    '/api/files/mv': { POST: authed(files.mv) },
    '/api/files/rm': { POST: authed(files.rm) },
    '/api/files/mkdir': { POST: authed(files.mkdir) },
    '/api/files/touch': { POST: authed(files.touch) },
    '/healthz': { GET: async () => okReply({ result: deps.health() }) },
    '/api/openapi.json': { GET: openapiDocument },
  }
  const share = async (req: HttpRequest) => shareRoute(deps.shares, req, null, await authenticate(deps, req))
  routes['/api/share'] = { GET: share, POST: share }
  if (deps.metrics) routes['/metrics'] = { GET: metricsRoute(deps.metrics.meter, deps.metrics.access) }
  for (const { path, route } of plugins.routes) routes[path] = pluginRoute(deps, route)
  Object.assign(routes, deps.oauth?.routes)
  return routes
}

/** Every method and path the handler answers, as `GET /api/files/ls` (the OpenAPI test checks each is documented). */
export function registeredRoutes(deps: ServerDeps): string[] {
  const table = Object.entries(routeTable(deps)).flatMap(([path, route]) => Object.keys(route).map((m) => `${m} ${path}`))
  const tus = deps.tus ? ['OPTIONS /api/files/tus', 'POST /api/files/tus', 'HEAD /api/files/tus/{id}', 'PATCH /api/files/tus/{id}', 'DELETE /api/files/tus/{id}'] : []
  return [...table, 'DELETE /api/share/{id}', ...tus]
}

function dispatch(deps: ServerDeps, routes: Record<string, Route>): HttpHandler {
  return async (req) => {
    try {
      const path = req.path.length > 1 ? req.path.replace(/\/+$/, '') : req.path
      const gateway = deps.gatewayRoutes?.[path]
      if (gateway) return await gateway(req)
      if (path.startsWith('/api/share/')) return await shareRoute(deps.shares, req, path.slice('/api/share/'.length), await authenticate(deps, req))
      // tus bodies are file bytes in through the HTTP door (they are not transfers: no `filegate_transfer_*`).
      if (deps.tus && isTusPath(path)) return await deps.tus.handle(deps.metrics?.meter.fileBody(req) ?? req, () => authenticate(deps, req))
      const admin = deps.admin && adminRoute(deps.admin, req, req.path)
      if (admin) return await admin
      // The web app's page and files (front/web/): after every API route, so it never shadows one.
      const web = routes[path] ? null : webRoute(req, path)
      if (web) return await web
      const route = routes[path]
      if (!route) throw new ApiError('NOT_FOUND', `no endpoint ${req.path}`)
      const fn = route[req.method]
      if (!fn) {
        throw new ApiError('INVALID_INPUT', `${req.method} is not supported on ${req.path}; use ${Object.keys(route).join(' or ')}`)
      }
      return await fn(req)
    } catch (err) {
      const { reply, error } = errorReply(err)
      // A cancelled request is a client that left: nobody reads the reply, nothing to report.
      if (error.code === 'INTERNAL' && !(isFsError(err) && err.code === 'ECANCELED')) {
        deps.logger.log('error', 'request failed', { requestId: req.requestId, err: describe(err) })
      }
      return deps.tus && isTusPath(req.path) ? tusReply(req, reply) : reply
    }
  }
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err)
  const cause = err.cause === undefined ? '' : ` (cause: ${describe(err.cause)})`
  return `${err.stack ?? err.message}${cause}`
}

/** A plugin's route: its methods, behind the session check unless it does its own (core/plugin.ts). */
function pluginRoute(deps: ServerDeps, route: PluginRoute): Route {
  const handle: (req: HttpRequest) => Promise<HttpReply> =
    route.auth === 'none'
      ? (req) => route.handle(req)
      : async (req) => {
          const { session, view } = await authenticate(deps, req)
          return route.handle(req, { backendID: session.backendID, home: session.home, view, permissions: { ...view.permissions } })
        }
  return Object.fromEntries((route.methods ?? ['GET']).map((m) => [m, handle]))
}

/**
 * The caller: `?share=` (with `?key=` when an API key is used, alone like a public
 * link), else the session token. A share narrows the root and the rights.
 */
async function authenticate(deps: ServerDeps, req: HttpRequest): Promise<Access> {
  const share = req.query.get('share')
  const key = req.query.get('key')
  if (key !== null) {
    if (share === null) throw new ApiError('INVALID_INPUT', 'an API key goes with a share: send ?key=<API_KEY>&share=<SHARE_ID>')
    await deps.keys.check(key, req.header('origin'))
  }
  if (share !== null) return deps.shares.resolve(share, req)
  const session = await deps.sessions.authenticate(req.header('authorization'))
  const view = await deps.openView({ spec: session.spec, key: session.key, permissions: sessionPermissions(session), login: `http\0${session.key}\0${session.id}` })
  return { session, view }
}
