/**
 * @module gateways/mcp/guard
 * What every request to the MCP door passes before its transport sees it: a present
 * `Origin` must be the service's own or a configured CORS origin (DNS rebinding), and
 * `Authorization: Bearer` must carry a credential `GatewayContext.bearer` grants for
 * the door's resource. A request that passes both is handled with its grant
 * (./grant.ts), which the handler releases once the request is answered.
 */
import type { HttpHandler, HttpReply, HttpRequest } from '../../core/http.js'
import type { McpDoor } from './door.js'
import { type Grant, grantFrom } from './grant.js'
import { jsonReply } from './replies.js'

/** Handles a request that passed the guard; releases `grant` once it is answered (the guard releases it when this throws). */
export type GrantedHandler = (req: HttpRequest, grant: Grant) => Promise<HttpReply>

/** Origin, then the bearer credential: a request that passes both gets its grant. */
export function guarded(door: McpDoor, handle: GrantedHandler): HttpHandler {
  return async (req) => {
    const ctx = door.context()
    if (ctx === null) return jsonReply(503, { error: 'unavailable', error_description: 'the MCP gateway is starting or stopping' })
    const origin = req.header('origin')
    if (origin !== undefined && origin !== new URL(door.publicUrl()).origin && !door.corsOrigins.has(origin)) {
      return jsonReply(403, { error: 'forbidden', error_description: `requests from the web origin ${origin} are not allowed (DNS rebinding protection): add it to cors.origins` })
    }
    const auth = req.header('authorization')
    const m = auth === undefined ? null : /^Bearer +(\S+) *$/i.exec(auth)
    if (m === null) return unauthorized(door, req, auth === undefined ? null : 'the Authorization header must be "Bearer <token>"')
    const res = await ctx.bearer(m[1]!, { resource: door.resource(), address: req.remoteAddress, requestId: req.requestId })
    if (!res.ok) {
      if (res.reason === 'unavailable') return jsonReply(503, { error: 'temporarily_unavailable', error_description: res.message }, { 'retry-after': '5' })
      return unauthorized(door, req, res.message)
    }
    const meter = door.meter()
    const grant = grantFrom(meter ? { ...res, fs: meter.fs(res.fs) } : res, req.requestId)
    try {
      return await handle(req, grant)
    } catch (err) {
      grant.release()
      throw err
    }
  }
}

/** 401 with where the client finds how to get a credential (RFC 9728's resource metadata). */
function unauthorized(door: McpDoor, req: HttpRequest, problem: string | null): HttpReply {
  // The metadata of the address the client used: an SSE client checks that the resource is the URL it started from (/sse).
  const at = req.path.startsWith('/mcp') ? '/mcp' : '/sse'
  const meta = `resource_metadata="${door.publicUrl()}/.well-known/oauth-protected-resource${at}"`
  const www = problem === null ? `Bearer ${meta}` : `Bearer ${meta}, error="invalid_token", error_description="${problem.replace(/["\\]/g, "'")}"`
  return jsonReply(401, problem === null ? { error: 'unauthorized', error_description: 'send "Authorization: Bearer <token>"' } : { error: 'invalid_token', error_description: problem }, {
    'www-authenticate': www,
  })
}
