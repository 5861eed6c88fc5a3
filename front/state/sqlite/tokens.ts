/** @module front/state/sqlite/tokens — revoked tokens in SQLite (core/state/tokens.ts). */
import type Database from 'better-sqlite3'
import type { RevokedTokens } from '../../../core/state.js'

export function sqliteTokens(db: Database.Database): RevokedTokens {
  const q = {
    revoke: db.prepare('INSERT OR REPLACE INTO revoked_tokens (id, until_ms) VALUES (?, ?)'),
    revoked: db.prepare<[string, number], { one: number }>('SELECT 1 AS one FROM revoked_tokens WHERE id = ? AND until_ms > ?'),
    purge: db.prepare('DELETE FROM revoked_tokens WHERE until_ms <= ?'),
  }
  q.purge.run(Date.now())
  return {
    async revokeToken(id, untilMs) {
      if (untilMs <= Date.now()) return
      q.revoke.run(id, untilMs)
    },
    async isTokenRevoked(id) {
      return q.revoked.get(id, Date.now()) !== undefined
    },
  }
}
