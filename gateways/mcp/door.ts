/**
 * @module gateways/mcp/door
 * What the MCP door's parts share (gateways/mcp/index.ts makes it): the request guard
 * (./guard.ts), the Streamable HTTP transport (./streamable.ts) and the legacy SSE one
 * (./legacy-sse.ts) all serve the sessions of one table, bounded by one set of call
 * slots, each session with its own MCP server (./server.ts: the tools and resources).
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import type { DoorMeter } from '../../core/doors.js'
import type { GatewayContext } from '../../core/gateway.js'
import { countCalls } from './call-meter.js'
import type { CallSlots } from './call-slots.js'
import type { McpSession, SessionTable } from './sessions.js'
import type { StoredSessions } from './stored-sessions.js'

export interface McpDoor {
  /** The gateway's context while it takes requests; null while it is starting or stopping. */
  context(): GatewayContext | null
  /** The door's counters (core/doors.ts), once started. */
  meter(): DoorMeter | null
  /** The Streamable HTTP sessions in the state store, so that any node serves them; once started. */
  stored(): StoredSessions
  /** The HTTP API's address as clients reach it (`public_url`). */
  publicUrl(): string
  /** The resource a credential must be good for, and the URL the SDK is told a request came to: `<public_url>/mcp`. */
  resource(): string
  /** Browser origins allowed besides the service's own (`cors.origins`). */
  readonly corsOrigins: ReadonlySet<string>
  readonly sessions: SessionTable
  readonly slots: CallSlots
  /** How often an idle SSE stream gets a comment line. */
  readonly keepAliveMs: number
  /** A session's own MCP server. */
  newServer(): McpServer
}

/**
 * Connects `server` to session `s`'s transport: the table forgets the session when its
 * server closes; `counted`: the calls it answers are counted on the door's meter from now on.
 */
export async function serveSession(door: McpDoor, server: McpServer, s: McpSession, counted = true): Promise<void> {
  server.server.onclose = () => door.sessions.remove(s.id)
  await server.connect(s.transport)
  if (counted) countOn(door, s)
}

/** Counts the calls session `s` answers from now on (when the door has its meter). */
export function countOn(door: McpDoor, s: McpSession): void {
  const meter = door.meter()
  if (meter) countCalls(s.transport, meter)
}
