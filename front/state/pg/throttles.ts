/** @module front/state/pg/throttles — login throttles' counts in PostgreSQL (core/state/throttles.ts). */
import type { ThrottleCount, ThrottleStore } from '../../../core/state.js'
import type { PgDb } from './db.js'

export function pgThrottles({ query, one, count, transaction }: PgDb): ThrottleStore {
  return {
    // One statement: the count goes up, or starts again when its window has ended; concurrent hits wait on the row.
    throttleHit: (key, windowMs, nowMs) =>
      one<ThrottleCount>(
        `INSERT INTO login_throttles AS t (key, count, since_ms, until_ms) VALUES ($1, 1, $2, $3)
         ON CONFLICT (key) DO UPDATE SET
           count = CASE WHEN t.until_ms > $2 THEN t.count + 1 ELSE 1 END,
           since_ms = CASE WHEN t.until_ms > $2 THEN t.since_ms ELSE $2 END,
           until_ms = CASE WHEN t.until_ms > $2 THEN t.until_ms ELSE $3 END
         RETURNING count, since_ms AS since`,
        [key, nowMs, nowMs + windowMs],
      ) as Promise<ThrottleCount>,
    throttlePeek: (key, nowMs) => one<ThrottleCount>('SELECT count, since_ms AS since FROM login_throttles WHERE key = $1 AND until_ms > $2', [key, nowMs]),
    throttleRefund: (key) =>
      transaction(async (c) => {
        const left = await c.query<{ count: number }>('UPDATE login_throttles SET count = count - 1 WHERE key = $1 RETURNING count', [key])
        if (left.rows[0] !== undefined && left.rows[0].count <= 0) await c.query('DELETE FROM login_throttles WHERE key = $1', [key])
      }),
    async throttleForget(key) {
      await query('DELETE FROM login_throttles WHERE key = $1', [key])
    },
    purgeThrottles: (nowMs) => count('DELETE FROM login_throttles WHERE until_ms <= $1', [nowMs]),
  }
}
