/** @module front/state/pg/shares — share links in PostgreSQL (core/state/shares.ts). */
import type { ShareStore } from '../../../core/state.js'
import type { PgDb } from './db.js'

const SHARE = 'id, owner, path, kind, can_read, can_upload, can_write, password_hash, expire_ms AS expire, sealed, created_ms AS created'

export function pgShares({ query, one, all, changed }: PgDb): ShareStore {
  return {
    async putShare(s) {
      await query(
        `INSERT INTO shares (id, owner, path, kind, can_read, can_upload, can_write, password_hash, expire_ms, sealed, created_ms)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner, path = EXCLUDED.path, kind = EXCLUDED.kind, can_read = EXCLUDED.can_read,
           can_upload = EXCLUDED.can_upload, can_write = EXCLUDED.can_write, password_hash = EXCLUDED.password_hash,
           expire_ms = EXCLUDED.expire_ms, sealed = EXCLUDED.sealed, created_ms = EXCLUDED.created_ms`,
        [s.id, s.owner, s.path, s.kind, s.can_read, s.can_upload, s.can_write, s.password_hash, s.expire, s.sealed, s.created],
      )
    },
    getShare: (id) => one(`SELECT ${SHARE} FROM shares WHERE id = $1`, [id]),
    listShares: (owner) =>
      owner === undefined
        ? all(`SELECT ${SHARE} FROM shares ORDER BY created_ms DESC, id`)
        : all(`SELECT ${SHARE} FROM shares WHERE owner = $1 ORDER BY created_ms DESC, id`, [owner]),
    deleteShare: (id) => changed('DELETE FROM shares WHERE id = $1', [id]),
  }
}
