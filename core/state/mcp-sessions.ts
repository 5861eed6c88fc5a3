/**
 * @module core/state/mcp-sessions
 * MCP Streamable HTTP sessions (gateways/mcp/stored-sessions.ts), so any node can serve one.
 * Part of the state store (core/state.ts).
 */

/**
 * An MCP Streamable HTTP session (docs/mcp-gateway.md), so that any node can serve
 * it: what rebuilds its server. Neither the session id nor a bearer token is stored.
 */
export interface McpSessionRecord {
  /** Hash of the session id. */
  readonly hash: string
  /** Hash of the login it is bound to (the subject): only that login may use it. */
  readonly owner: string
  /** The protocol version agreed at initialization. */
  readonly protocol_version: string
  /** The client's `initialize` request params, JSON. */
  readonly init: string
  readonly created: number
  readonly last_seen: number
}

export interface McpSessionStore {
  putMcpSession(session: McpSessionRecord): Promise<void>
  getMcpSession(hash: string): Promise<McpSessionRecord | null>
  /** Records a use. @returns false when there is no such session (ended, purged) */
  touchMcpSession(hash: string, atMs: number): Promise<boolean>
  /** @returns false when there was no such session */
  deleteMcpSession(hash: string): Promise<boolean>
  /** Removes sessions last seen before `beforeMs`. @returns how many */
  purgeMcpSessions(beforeMs: number): Promise<number>
}
