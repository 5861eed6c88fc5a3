/** @module front/state/sqlite/mcp-sessions — MCP sessions in SQLite (core/state/mcp-sessions.ts). */
import type Database from 'better-sqlite3'
import type { McpSessionRecord, McpSessionStore } from '../../../core/state.js'

interface McpSessionRow {
  hash: string
  owner: string
  protocol_version: string
  init: string
  created_ms: number
  last_seen_ms: number
}

const toMcpSession = ({ created_ms, last_seen_ms, ...r }: McpSessionRow): McpSessionRecord => ({ ...r, created: created_ms, last_seen: last_seen_ms })

export function sqliteMcpSessions(db: Database.Database): McpSessionStore {
  const q = {
    putMcp: db.prepare(
      `INSERT OR REPLACE INTO mcp_sessions (hash, owner, protocol_version, init, created_ms, last_seen_ms)
       VALUES (@hash, @owner, @protocol_version, @init, @created_ms, @last_seen_ms)`,
    ),
    getMcp: db.prepare<[string], McpSessionRow>('SELECT * FROM mcp_sessions WHERE hash = ?'),
    touchMcp: db.prepare('UPDATE mcp_sessions SET last_seen_ms = MAX(last_seen_ms, ?) WHERE hash = ?'),
    deleteMcp: db.prepare('DELETE FROM mcp_sessions WHERE hash = ?'),
    purgeMcp: db.prepare('DELETE FROM mcp_sessions WHERE last_seen_ms < ?'),
  }
  return {
    async putMcpSession(m) {
      q.putMcp.run({ hash: m.hash, owner: m.owner, protocol_version: m.protocol_version, init: m.init, created_ms: m.created, last_seen_ms: m.last_seen })
    },
    async getMcpSession(hash) {
      const r = q.getMcp.get(hash)
      return r ? toMcpSession(r) : null
    },
    async touchMcpSession(hash, atMs) {
      return q.touchMcp.run(atMs, hash).changes > 0
    },
    async deleteMcpSession(hash) {
      return q.deleteMcp.run(hash).changes > 0
    },
    async purgeMcpSessions(beforeMs) {
      return q.purgeMcp.run(beforeMs).changes
    },
  }
}
