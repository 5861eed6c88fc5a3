/**
 * @module gateways/mcp/replies
 * The MCP door's own HTTP answers, before a request reaches an SDK transport: a JSON body
 * for HTTP-level refusals (origin, credential, method, size), a JSON-RPC error for a
 * refused JSON-RPC request (no room for a session, too many calls at once), and the
 * bounded read of a request's body.
 */
import type { HttpReply, HttpRequest } from '../../core/http.js'

/** A JSON-RPC message larger than this is refused (413). */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024

/** The body as text; null when it has more than `max` bytes. */
export async function readBody(req: HttpRequest, max: number): Promise<string | null> {
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of req.body) {
    size += chunk.byteLength
    if (size > max) return null
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

export function jsonReply(status: number, value: unknown, headers: Record<string, string> = {}): HttpReply {
  return { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers }, body: JSON.stringify(value) }
}

export function rpcError(status: number, code: number, message: string, headers: Record<string, string> = {}): HttpReply {
  return jsonReply(status, { jsonrpc: '2.0', error: { code, message }, id: null }, headers)
}

/** A request whose calls the login's call slots refuse (gateways/mcp/call-slots.ts): too many at once is retried in a second. */
export function slotsRefusal(why: { readonly status: number; readonly code: number; readonly message: string }): HttpReply {
  return rpcError(why.status, why.code, why.message, why.status === 429 ? { 'retry-after': '1' } : {})
}
