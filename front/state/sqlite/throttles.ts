/** @module front/state/sqlite/throttles — login throttles' counts in SQLite (core/state/throttles.ts). */
import type Database from 'better-sqlite3'
import type { ThrottleCount, ThrottleStore } from '../../../core/state.js'

export function sqliteThrottles(db: Database.Database): ThrottleStore {
  const q = {
    /** One statement: the count goes up, or starts again when its window has ended. */
    throttleHit: db.prepare<{ key: string; now: number; until: number }, { count: number; since_ms: number }>(
      `INSERT INTO login_throttles (key, count, since_ms, until_ms) VALUES (@key, 1, @now, @until)
       ON CONFLICT (key) DO UPDATE SET
         count = CASE WHEN until_ms > @now THEN count + 1 ELSE 1 END,
         since_ms = CASE WHEN until_ms > @now THEN since_ms ELSE @now END,
         until_ms = CASE WHEN until_ms > @now THEN until_ms ELSE @until END
       RETURNING count, since_ms`,
    ),
    throttlePeek: db.prepare<[string, number], { count: number; since_ms: number }>('SELECT count, since_ms FROM login_throttles WHERE key = ? AND until_ms > ?'),
    throttleDown: db.prepare('UPDATE login_throttles SET count = count - 1 WHERE key = ?'),
    throttleZero: db.prepare('DELETE FROM login_throttles WHERE key = ? AND count <= 0'),
    throttleForget: db.prepare('DELETE FROM login_throttles WHERE key = ?'),
    purgeThrottles: db.prepare('DELETE FROM login_throttles WHERE until_ms <= ?'),
  }
  const throttleRefund = db.transaction((key: string): void => {
    q.throttleDown.run(key)
    q.throttleZero.run(key)
  })
  return {
    async throttleHit(key, windowMs, nowMs) {
      const r = q.throttleHit.get({ key, now: nowMs, until: nowMs + windowMs })!
      return { count: r.count, since: r.since_ms } satisfies ThrottleCount
    },
    async throttlePeek(key, nowMs) {
      const r = q.throttlePeek.get(key, nowMs)
      return r ? { count: r.count, since: r.since_ms } : null
    },
    async throttleRefund(key) {
      throttleRefund(key)
    },
    async throttleForget(key) {
      q.throttleForget.run(key)
    },
    async purgeThrottles(nowMs) {
      return q.purgeThrottles.run(nowMs).changes
    },
  }
}
