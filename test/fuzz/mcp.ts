/**
 * The MCP gateway's door: every tool (ls, cat, write, mkdir, touch, mv, rm, stat, find,
 * share) and resource reads through the MCP SDK's own client, with fuzzed paths and
 * arguments of every type; and the transports themselves (/mcp, /sse, /messages) with
 * fuzzed headers, session ids and JSON-RPC bodies. After each case: a failure is a tool
 * result with `isError` or a JSON-RPC error (never a transport failure, never a 5xx
 * but 503), no answer leaks, nothing outside changed; the session still answers.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import fc from 'fast-check'
import { mcpTransport } from '../gateways/mcp/client.js'
import { anyValue, headerValue, jsonObject, path, wrongCredential } from './arbitraries.js'
import { type Door, checkCase, tally } from './door.js'
import { expect, leak } from './invariants.js'
import { raw } from './raw-http.js'
import type { World } from './world.js'

const TOOLS = ['ls', 'cat', 'write', 'mkdir', 'touch', 'mv', 'rm', 'stat', 'find', 'share'] as const

/** Arguments by tool: its own keys with fuzzed values (paths mostly), sometimes junk keys and wrong types. */
const args = fc.constantFrom(...TOOLS).chain((tool) =>
  fc.tuple(
    fc.constant(tool),
    fc.oneof(
      { weight: 6, arbitrary: fc.record({ path, from: path, to: path, content: fc.string({ maxLength: 40 }), encoding: fc.constantFrom('text', 'utf8', 'base64', 'hex', ''), offset: fc.oneof(fc.nat(), fc.integer()), length: fc.oneof(fc.nat({ max: 2 << 20 }), fc.integer()), pattern: fc.oneof(fc.constantFrom('*', '**', '*.txt', '[a-z]*', '[!a]', '\\*', '[', '*'.repeat(200), 'secret*', 'marker*'), fc.string({ maxLength: 12 })), max_depth: fc.integer({ min: -2, max: 100 }), recursive: fc.boolean(), overwrite: fc.boolean(), can_upload: fc.boolean(), can_write: fc.boolean() }, { requiredKeys: ['path', 'from'] }) },
      { weight: 1, arbitrary: jsonObject(['path', 'from', 'to', 'content', 'encoding', 'offset', 'length', 'pattern', 'recursive', 'expire', 'password'], anyValue) },
    ),
  ),
)

interface Session {
  client: Client
  /** Why the transport failed, once it has. */
  broken: string | null
}

async function connect(w: World): Promise<Session> {
  const client = new Client({ name: 'filegate-fuzz', version: '1.0.0' })
  const s: Session = { client, broken: null }
  client.onerror = (e) => (s.broken ??= `the MCP transport failed: ${e.message}`)
  await client.connect(mcpTransport(w.url, w.token, 'streamable'))
  return s
}

export async function mcpDoor(w: World): Promise<Door> {
  let s = await connect(w)
  /**
   * A fresh client every 1000 calls: the SDK's client transport leaves an abort listener
   * per request on its one AbortSignal (undici's, in this process; node warns past 1500).
   */
  let calls = 0
  const session = async (): Promise<Session> => {
    if (s.broken || ++calls % 1000 === 0) {
      if (!s.broken) await s.client.close()
      s = await connect(w)
    }
    return s
  }

  const checkLeak = (what: string, result: unknown): void => {
    const leaked = leak(w, JSON.stringify(result))
    expect(leaked === null, `${what}: ${leaked}`)
  }

  const tools = fc.asyncProperty(args, async ([tool, a]) => {
    const s = await session()
    await checkCase(w, async () => {
      const what = `MCP ${tool} ${JSON.stringify(a).slice(0, 400)}`
      const r = await s.client.callTool({ name: tool, arguments: a as Record<string, unknown> }, undefined, { timeout: 60_000 }).catch((e: unknown) => e)
      if (r instanceof Error) {
        // A JSON-RPC error (invalid params, unknown tool) is MCP's shape; anything else (the transport, a 5xx) is not.
        expect(r instanceof McpError && typeof r.code === 'number' && r.code !== -32603, `${what}: not a tool result nor a JSON-RPC error: ${String(r)}`)
        tally(`mcp ${tool} rpc ${r.code}`)
        checkLeak(what, r.message)
      } else {
        const result = r as { isError?: boolean; content: { type: string; text?: string }[] }
        tally(`mcp ${tool} ${result.isError ? `isError ${String(result.content[0]?.text).split(':')[0]}` : 'ok'}`)
        if (result.isError) expect(result.content[0]?.type === 'text' && typeof result.content[0].text === 'string' && result.content[0].text.length > 0, `${what}: an error result without a message`)
        checkLeak(what, result)
      }
      expect(s.broken === null, `${what}: ${s.broken}`)
    })
  })

  /** Resources: filegate:///path, fuzzed. */
  const resources = fc.asyncProperty(path, fc.constantFrom('filegate://', 'filegate:///', 'file:///', 'filegate://host/', ''), async (p, scheme) => {
    const s = await session()
    await checkCase(w, async () => {
      const uri = `${scheme}${encodeURI(p.toWellFormed())}`
      const r = await s.client.readResource({ uri }, { timeout: 60_000 }).catch((e: unknown) => e)
      if (r instanceof Error) {
        // The SDK itself parses the URI before filegate sees it: a non-URL is its -32603 "Invalid URL".
        expect(r instanceof McpError && (r.code !== -32603 || /Invalid URL$/.test(r.message)), `MCP read ${uri}: not a JSON-RPC error: ${String(r)}`)
        checkLeak(`MCP read ${uri}`, r.message)
      } else checkLeak(`MCP read ${uri}`, r)
    })
  })

  /** The transports with fuzzed credentials, headers, session ids and JSON-RPC bodies. */
  const transports = fc.asyncProperty(
    fc.constantFrom(['POST', '/mcp'], ['GET', '/mcp'], ['DELETE', '/mcp'], ['POST', '/messages'], ['GET', '/sse']) as fc.Arbitrary<[string, string]>,
    fc.oneof(fc.constant(`Bearer ${w.token}`), wrongCredential(w.token).map((c) => `Bearer ${c}`), fc.constant(undefined)),
    fc.option(fc.oneof(headerValue, fc.uuid()), { nil: undefined }),
    fc.constantFrom('application/json, text/event-stream', 'application/json', 'text/event-stream', '*/*', '', 'text/html'),
    fc.constantFrom('application/json', 'text/plain', '', 'application/json; charset=latin1'),
    fc.oneof(
      fc.record({ jsonrpc: fc.constantFrom('2.0', '1.0', 2), id: fc.oneof(fc.nat(), fc.string({ maxLength: 5 }), fc.constant(null)), method: fc.constantFrom('initialize', 'tools/call', 'tools/list', 'resources/read', 'resources/list', 'ping', 'notifications/initialized', 'x', ''), params: jsonObject(['name', 'arguments', 'uri', 'protocolVersion', 'capabilities', 'clientInfo']) }, { requiredKeys: ['jsonrpc', 'method'] }).map((o) => JSON.stringify(o)),
      fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
      fc.string({ maxLength: 40 }),
      fc.constant(JSON.stringify(Array.from({ length: 50 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'ping' })))),
    ),
    async ([method, route], authorization, session, accept, contentType, text) => {
      await checkCase(w, async () => {
        const headers: Record<string, string> = { accept, 'content-type': contentType, 'mcp-protocol-version': '2025-11-25' }
        if (authorization !== undefined) headers.authorization = authorization
        const target = route === '/messages' ? `/messages?sessionId=${encodeURIComponent(session ?? '')}` : route
        if (session !== undefined && route === '/mcp') headers['mcp-session-id'] = session
        const what = `${method} ${target} ${JSON.stringify(headers).slice(0, 300)} ${text.slice(0, 200)}`
        const a = await raw(w.url, method, target, headers, method === 'POST' ? new TextEncoder().encode(text) : undefined)
        if (a === null) return // not sent, or refused by the engine (raw-http.ts)
        tally(`mcp transport ${method} ${route} ${a.status}`)
        expect(a.status < 500 || a.status === 503, `${what} → ${a.status}: ${a.body.toString().slice(0, 300)}`)
        if (a.status >= 400) {
          const body = a.body.toString()
          let parsed: { error?: unknown; status?: unknown } | null = null
          try {
            parsed = JSON.parse(body) as { error?: unknown; status?: unknown }
          } catch {}
          // JSON-RPC's error object, OAuth's bearer error (RFC 6750), or the API's envelope.
          const shaped = parsed !== null && (typeof parsed.error === 'object' || typeof parsed.error === 'string' || parsed.status === 'error')
          expect(shaped, `${what} → ${a.status}: not a JSON-RPC, OAuth or API error: ${body.slice(0, 300)}`)
        }
        const leaked = leak(w, a.body)
        expect(leaked === null, `${what}: ${leaked}`)
      })
    },
  )

  return {
    properties: [
      { name: 'tools', property: tools, weight: 6 },
      { name: 'resources', property: resources, weight: 1 },
      { name: 'transports', property: transports, weight: 2 },
    ],
    async alive() {
      const fresh = await connect(w) // a new session works
      try {
        const r = await fresh.client.callTool({ name: 'ls', arguments: { path: '/' } })
        expect(!r.isError, `MCP ls / after a batch: ${JSON.stringify(r).slice(0, 300)}`)
      } finally {
        await fresh.client.close()
      }
    },
    async close() {
      await s.client.close()
    },
  }
}
