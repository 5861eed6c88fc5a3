/** @module front/state/pg/mcp-sessions — MCP sessions in PostgreSQL (core/state/mcp-sessions.ts). */
import type { McpSessionStore } from '../../../core/state.js'
import type { PgDb } from './db.js'

const MCP_SESSION = 'hash, owner, protocol_version, init, created_ms AS created, last_seen_ms AS last_seen'

export function pgMcpSessions({ query, one, count, changed }: PgDb): McpSessionStore {
  return {
    async putMcpSession(m) {
      await query(
        `INSERT INTO mcp_sessions (hash, owner, protocol_version, init, created_ms, last_seen_ms) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (hash) DO UPDATE SET owner = EXCLUDED.owner, protocol_version = EXCLUDED.protocol_version, init = EXCLUDED.init,
           created_ms = EXCLUDED.created_ms, last_seen_ms = EXCLUDED.last_seen_ms`,
        [m.hash, m.owner, m.protocol_version, m.init, m.created, m.last_seen],
      )
    },
    getMcpSession: (hash) => one(`SELECT ${MCP_SESSION} FROM mcp_sessions WHERE hash = $1`, [hash]),
    touchMcpSession: (hash, atMs) => changed('UPDATE mcp_sessions SET last_seen_ms = GREATEST(last_seen_ms, $1) WHERE hash = $2', [atMs, hash]),
    deleteMcpSession: (hash) => changed('DELETE FROM mcp_sessions WHERE hash = $1', [hash]),
    purgeMcpSessions: (beforeMs) => count('DELETE FROM mcp_sessions WHERE last_seen_ms < $1', [beforeMs]),
  }
}
