/** @module front/state/pg/s3-keys — gateway users' S3 access keys in PostgreSQL (core/state/s3-keys.ts). */
import type { S3KeyRecord, S3KeyStore } from '../../../core/state.js'
import { fromBits, toBits } from '../../../core/permissions.js'
import { type PgDb, isNoOwner } from './db.js'

const S3_KEY = 'id, user_name AS "user", sealed, permissions, created_ms AS created, last_used_ms AS last_used'

/** The bits as stored (core/permissions.ts `toBits`); NULL: the key has its user's. */
type S3KeyRow = Omit<S3KeyRecord, 'permissions'> & { permissions: number | null }
const toS3Key = (k: S3KeyRow): S3KeyRecord => ({ ...k, permissions: k.permissions === null ? null : fromBits(k.permissions) })

export function pgS3Keys({ query, one, all, changed }: PgDb): S3KeyStore {
  return {
    async addS3Key(k) {
      try {
        const bits = k.permissions === null ? null : toBits(k.permissions)
        await query('INSERT INTO s3_keys (id, user_name, sealed, permissions, created_ms, last_used_ms) VALUES ($1, $2, $3, $4, $5, $6)', [k.id, k.user, k.sealed, bits, k.created, k.last_used])
        return 'added'
      } catch (err) {
        if (isNoOwner(err)) return 'no-user'
        throw err
      }
    },
    getS3Key: async (id) => {
      const row = await one<S3KeyRow>(`SELECT ${S3_KEY} FROM s3_keys WHERE id = $1`, [id])
      return row && toS3Key(row)
    },
    listS3Keys: async (user) => (await all<S3KeyRow>(`SELECT ${S3_KEY} FROM s3_keys WHERE user_name = $1 ORDER BY created_ms, seq`, [user])).map(toS3Key),
    async touchS3Key(id, atMs) {
      await query('UPDATE s3_keys SET last_used_ms = $1 WHERE id = $2', [atMs, id])
    },
    setS3KeyPermissions: (user, id, p) => changed('UPDATE s3_keys SET permissions = $1 WHERE user_name = $2 AND id = $3', [p === null ? null : toBits(p), user, id]),
    deleteS3Key: (user, id) => changed('DELETE FROM s3_keys WHERE user_name = $1 AND id = $2', [user, id]),
  }
}
