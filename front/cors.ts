/**
 * @module front/cors
 * CORS (docs/api.md, "CORS"). Off by default: an origin gets CORS headers only
 * when the configuration (`cors.origins`) or some API key lists it. Which key may
 * be used from which origin is checked separately, at authentication (a listed
 * origin using another key's share gets 403 there). Other origins get no CORS
 * headers at all, so the browser keeps the response from the page.
 */
import type { HttpReply, HttpRequest } from '../core/http.js'

const ALLOW_METHODS = 'GET, HEAD, POST, PATCH, DELETE, OPTIONS'
/** The tus headers are those of resumable uploads (front/tus/). */
const TUS_REQUEST_HEADERS = 'Tus-Resumable, Upload-Length, Upload-Defer-Length, Upload-Offset, Upload-Metadata'
const TUS_RESPONSE_HEADERS =
  'Location, Tus-Resumable, Tus-Version, Tus-Extension, Tus-Max-Size, Upload-Offset, Upload-Length, Upload-Defer-Length, Upload-Metadata, Upload-Expires'
/** The MCP gateway's (gateways/mcp/): its session and protocol version, an event stream's resumption, and 401s' resource metadata. */
const MCP_REQUEST_HEADERS = 'Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID'
const MCP_RESPONSE_HEADERS = 'Mcp-Session-Id, WWW-Authenticate'
const ALLOW_HEADERS = `Authorization, Content-Type, X-Share-Password, Range, X-Request-Id, If-None-Match, If-Modified-Since, ${TUS_REQUEST_HEADERS}, ${MCP_REQUEST_HEADERS}`
const EXPOSE_HEADERS = `X-Request-Id, Content-Range, Content-Disposition, ETag, Content-Length, Accept-Ranges, Last-Modified, ${TUS_RESPONSE_HEADERS}, ${MCP_RESPONSE_HEADERS}`

/** Is this origin allowed (config or any live key)? */
export type OriginPolicy = (origin: string) => boolean

/** The CORS headers for a request; empty when its Origin is absent or not allowed. */
export function corsHeaders(req: HttpRequest, allowed: OriginPolicy): Record<string, string> {
  const origin = req.header('origin')
  if (origin === undefined || !allowed(origin)) return {}
  return { 'access-control-allow-origin': origin, vary: 'Origin', 'access-control-expose-headers': EXPOSE_HEADERS }
}

/** An OPTIONS request: the preflight answer (204), with CORS headers only for an allowed origin. */
export function preflight(req: HttpRequest, allowed: OriginPolicy): HttpReply {
  const headers: Record<string, string> = { allow: ALLOW_METHODS, 'cache-control': 'no-store' }
  const cors = corsHeaders(req, allowed)
  if (cors['access-control-allow-origin'] !== undefined) {
    Object.assign(headers, cors, {
      'access-control-allow-methods': ALLOW_METHODS,
      'access-control-allow-headers': ALLOW_HEADERS,
      'access-control-max-age': '600',
    })
  }
  return { status: 204, headers }
}

/** `reply` with the CORS headers added (a new object: replies are read-only). */
export function withCors(reply: HttpReply, cors: Record<string, string>): HttpReply {
  if (Object.keys(cors).length === 0) return reply
  const vary = reply.headers?.vary
  return { ...reply, headers: { ...reply.headers, ...cors, ...(vary && vary !== 'Origin' ? { vary: `${vary}, Origin` } : {}) } }
}

/** `https://app.example.com[:port]`, exactly as a browser sends it in Origin. */
export function isOrigin(s: string): boolean {
  try {
    const u = new URL(s)
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.origin === s
  } catch {
    return false
  }
}

/**
 * Public endpoints that take no cookie (OAuth discovery, token, registration,
 * revocation: front/oauth/): open to every origin, without credentials.
 */
export const OPEN_CORS: Readonly<Record<string, string>> = { 'access-control-allow-origin': '*', 'access-control-expose-headers': 'WWW-Authenticate' }

/** The preflight of such an endpoint. */
export function openPreflight(): HttpReply {
  return {
    status: 204,
    headers: {
      ...OPEN_CORS,
      allow: 'GET, POST, OPTIONS',
      'access-control-allow-methods': 'GET, POST, OPTIONS',
      'access-control-allow-headers': 'Authorization, Content-Type, MCP-Protocol-Version',
      'access-control-max-age': '600',
      'cache-control': 'no-store',
    },
  }
}
