/**
 * @module gateways/mcp
 * The MCP gateway (docs/mcp-gateway.md): filegate's files as MCP tools and resources,
 * on the main HTTP port:
 * - Streamable HTTP (protocol 2025-11-25) at `/mcp` (gateways/mcp/streamable.ts);
 * - the legacy HTTP+SSE transport at `/sse` and `/messages` (gateways/mcp/legacy-sse.ts).
 * Every request carries `Authorization: Bearer` (a filegate session token, or an access
 * token of filegate's OAuth server for the resource `<public_url>/mcp`), checked by
 * `GatewayContext.bearer`; a present `Origin` must be the service's own or a configured
 * CORS origin (DNS rebinding): gateways/mcp/guard.ts. Sessions: gateways/mcp/sessions.ts;
 * Streamable HTTP sessions are also kept in the state store, so any node serves them
 * (gateways/mcp/stored-sessions.ts, gateways/mcp/restore.ts); legacy SSE sessions live
 * on the node that holds their stream. What the parts share: gateways/mcp/door.ts.
 */
import type { DoorMeter, DrainRegistration } from '../../core/doors.js'
import type { Gateway, GatewayContext } from '../../core/gateway.js'
import { CallSlots } from './call-slots.js'
import type { McpDoor } from './door.js'
import { guarded } from './guard.js'
import { openSseStream, postSseMessage } from './legacy-sse.js'
import { createMcpServer } from './server.js'
import { SessionTable } from './sessions.js'
import { StoredSessions } from './stored-sessions.js'
import { StreamableHttp } from './streamable.js'
import { DEFAULT_LIMITS, type ToolLimits } from './tools.js'
export interface McpGatewayOptions {
  /** The HTTP API's address as clients reach it (`public_url`); known once the port is. */
  readonly publicUrl: () => string
  /** Browser origins allowed besides the service's own (`cors.origins`). */
  readonly corsOrigins: readonly string[]
  readonly idleSeconds: number
  readonly maxSessions: number
  /** Sessions one subject (login) may hold (default 32). */
  readonly sessionsPerSubject?: number
  /** Sessions one client address may hold (default 100). */
  readonly sessionsPerAddress?: number
  /** Tool calls one subject may have running at once (default 8). */
  readonly callsPerSubject?: number
  /** Messages one JSON-RPC batch may hold (default 20). */
  readonly maxBatch?: number
  readonly version: string
  readonly limits?: Partial<ToolLimits>
  /** SSE comment lines keep idle streams open through proxies and the engine's idle timeout (default 5 s). */
  readonly keepAliveMs?: number
}

export function createMcpGateway(opts: McpGatewayOptions): Gateway {
  let ctx: GatewayContext | null = null
  let stored: StoredSessions | null = null
  /** The door's counters (core/doors.ts) and its share of the drain, once started. */
  let meter: DoorMeter | null = null
  let drain: DrainRegistration | null = null
  const limits: ToolLimits = { ...DEFAULT_LIMITS, ...opts.limits }
  /** Tool calls under way, every session's: a shutdown gives them the grace to answer. */
  const calls = { running: 0 }
  const sessions = new SessionTable(
    { idleMs: opts.idleSeconds * 1000, max: opts.maxSessions, perSubject: opts.sessionsPerSubject ?? 32, perAddress: opts.sessionsPerAddress ?? 100 },
    (s) => {
      if (s.kind === 'streamable') stored?.remove(s.id).catch((err: unknown) => ctx?.log('warn', 'mcp: an evicted session stays in the store', { error: String(err) }))
    },
    () => meter?.session() ?? (() => {}),
  )
  const door: McpDoor = {
    context: () => ctx,
    meter: () => meter,
    stored: () => {
      if (stored === null) throw new Error('the MCP gateway is not started')
      return stored
    },
    publicUrl: opts.publicUrl,
    resource: () => `${opts.publicUrl()}/mcp`,
    corsOrigins: new Set(opts.corsOrigins),
    sessions,
    slots: new CallSlots({ perSubject: opts.callsPerSubject ?? 8, maxBatch: opts.maxBatch ?? 20 }),
    keepAliveMs: opts.keepAliveMs ?? 5000,
    newServer: () => createMcpServer({ version: opts.version, limits, calls, publicUrl: opts.publicUrl, log: (level, msg, fields) => ctx?.log(level, msg, fields) }),
  }
  const streamable = new StreamableHttp(door)

  return {
    name: 'mcp',
    routes: {
      '/mcp': guarded(door, (req, grant) => streamable.handle(req, grant)),
      '/sse': guarded(door, (req, grant) => openSseStream(door, req, grant)),
      '/messages': guarded(door, (req, grant) => postSseMessage(door, req, grant)),
    },
    async start(c) {
      ctx = c
      stored = new StoredSessions(c.state, opts.idleSeconds * 1000)
      meter = c.meter('mcp')
      // New requests are refused at once; tool calls under way get the grace to answer.
      drain = c.drain.register({ name: 'mcp', stopAccepting: () => (ctx = null), busy: () => calls.running, end: () => sessions.closeAll() })
    },
    async stop(graceMs = 0) {
      ctx = null
      await (drain ? drain.stop(graceMs) : sessions.closeAll())
      drain = null
    },
  }
}
