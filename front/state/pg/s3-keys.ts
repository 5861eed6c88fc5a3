/** @module front/state/pg/s3-keys — gateway users' S3 access keys in PostgreSQL (core/state/s3-keys.ts). */
import type { S3KeyStore } from '../../../core/state.js'
import { type PgDb, isNoOwner } from './db.js'

const S3_KEY = 'id, user_name AS "user", sealed, created_ms AS created, last_used_ms AS last_used'

export function pgS3Keys({ query, one, all, changed }: PgDb): S3KeyStore {
  return {
    async addS3Key(k) {
      try {
        await query('INSERT INTO s3_keys (id, user_name, sealed, created_ms, last_used_ms) VALUES ($1, $2, $3, $4, $5)', [k.id, k.user, k.sealed, k.created, k.last_used])
        return 'added'
      } catch (err) {
        if (isNoOwner(err)) return 'no-user'
        throw err
      }
    },
    getS3Key: (id) => one(`SELECT ${S3_KEY} FROM s3_keys WHERE id = $1`, [id]),
    listS3Keys: (user) => all(`SELECT ${S3_KEY} FROM s3_keys WHERE user_name = $1 ORDER BY created_ms, seq`, [user]),
    async touchS3Key(id, atMs) {
      await query('UPDATE s3_keys SET last_used_ms = $1 WHERE id = $2', [atMs, id])
    },
    deleteS3Key: (user, id) => changed('DELETE FROM s3_keys WHERE user_name = $1 AND id = $2', [user, id]),
  }
}
