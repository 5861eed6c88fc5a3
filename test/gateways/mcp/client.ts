/**
 * Test helpers for the MCP gateway: the SDK's own client over either transport, with a
 * bearer credential, against a filegate started by the test.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import type { Test } from 'tap'

export type Kind = 'streamable' | 'sse'
export const KINDS: readonly Kind[] = ['streamable', 'sse']

export interface Connected {
  readonly client: Client
  readonly transport: StreamableHTTPClientTransport | SSEClientTransport
  /** Calls a tool; the result as the server sent it. */
  call(name: string, args?: Record<string, unknown>, opts?: { signal?: AbortSignal }): Promise<CallToolResult>
  /** The text of a tool's first content item. */
  text(name: string, args?: Record<string, unknown>): Promise<string>
}

/** The SDK's client transport of `kind` to filegate at `url`, sending `token` as Bearer on every request (also bench/mcp.ts's). */
export function mcpTransport(url: string, token: string, kind: Kind): StreamableHTTPClientTransport | SSEClientTransport {
  const authorization = `Bearer ${token}`
  if (kind === 'streamable') return new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { Authorization: authorization } } })
  return new SSEClientTransport(new URL(`${url}/sse`), {
    // The event stream's GET goes through `fetch` too: the credential is added to every request.
    fetch: (u, init) => {
      const h = new Headers(init?.headers)
      h.set('authorization', authorization)
      return fetch(u, { ...init, headers: h })
    },
  })
}

export async function connect(t: Test, url: string, token: string, kind: Kind): Promise<Connected> {
  const transport = mcpTransport(url, token, kind)
  const client = new Client({ name: 'filegate-test', version: '1.0.0' })
  await client.connect(transport)
  t.teardown(() => client.close())
  const call = async (name: string, args: Record<string, unknown> = {}, opts: { signal?: AbortSignal } = {}) =>
    (await client.callTool({ name, arguments: args }, undefined, { ...opts, timeout: 120_000 })) as CallToolResult
  return {
    client,
    transport,
    call,
    text: async (name, args) => {
      const r = await call(name, args)
      const first = r.content[0]
      return first?.type === 'text' ? first.text : JSON.stringify(r.content)
    },
  }
}

/** The text of a result's first content item. */
export function textOf(r: CallToolResult): string {
  const first = r.content[0]
  return first?.type === 'text' ? first.text : ''
}

/** A raw JSON-RPC initialize request, for the tests that speak HTTP themselves. */
export const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
}

export const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
