/** @module front/state/pg/tokens — revoked tokens in PostgreSQL (core/state/tokens.ts). */
import type { RevokedTokens } from '../../../core/state.js'
import type { PgDb } from './db.js'

export function pgTokens({ query, one }: PgDb): RevokedTokens {
  return {
    async revokeToken(id, untilMs) {
      if (untilMs <= Date.now()) return
      await query('INSERT INTO revoked_tokens (id, until_ms) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET until_ms = EXCLUDED.until_ms', [id, untilMs])
    },
    async isTokenRevoked(id) {
      return (await one('SELECT 1 FROM revoked_tokens WHERE id = $1 AND until_ms > $2', [id, Date.now()])) !== null
    },
  }
}
