/**
 * @module gateways/mcp/restore
 * A Streamable HTTP session rebuilt on a node that did not open it (stored-sessions.ts),
 * through the SDK transport's public API only: a new server and a transport whose
 * session id generator names the stored id are connected, then the client's own
 * `initialize` request (as stored) and its `initialized` notification are handed to
 * the transport as requests. The server negotiates exactly as it did for the client;
 * the answers go nowhere. Afterwards the transport serves the client's requests for that
 * session as the node that opened it would.
 */
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js'
import type { InitializeParams } from './stored-sessions.js'

const HEADERS = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' }

/** Replays the handshake of session `id` on a transport connected to a new server. @throws Error when the transport does not end up in that session */
export async function replayInitialize(transport: WebStandardStreamableHTTPServerTransport, url: string, id: string, init: InitializeParams): Promise<void> {
  const hello = await transport.handleRequest(new Request(url, { method: 'POST', headers: HEADERS, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: init }) }))
  const answer = await hello.text()
  if (hello.status !== 200 || transport.sessionId !== id) throw new Error(`the MCP session could not be rebuilt here: ${hello.status} ${answer.slice(0, 200)}`)
  const ready = await transport.handleRequest(
    new Request(url, { method: 'POST', headers: { ...HEADERS, 'mcp-session-id': id }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) }),
  )
  await ready.text()
  if (ready.status !== 202) throw new Error(`the MCP session could not be rebuilt here: ${ready.status}`)
}

/** The params of the `initialize` request among the JSON-RPC message(s) of `body`; undefined when there is none. */
export function initializeParams(body: string): InitializeParams | undefined {
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    return undefined
  }
  const found = (Array.isArray(parsed) ? parsed : [parsed]).find((m) => isInitializeRequest(m)) as { params: InitializeParams } | undefined
  return found?.params
}
