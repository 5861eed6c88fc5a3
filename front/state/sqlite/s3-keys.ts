/** @module front/state/sqlite/s3-keys — gateway users' S3 access keys in SQLite (core/state/s3-keys.ts). */
import type Database from 'better-sqlite3'
import type { S3KeyRecord, S3KeyStore } from '../../../core/state.js'
import { fromBits, toBits } from '../../../core/permissions.js'

interface S3KeyRow {
  id: string
  user: string
  sealed: string
  /** The bits (core/permissions.ts `toBits`) the key narrows its user's to; NULL: its user's. */
  permissions: number | null
  created_ms: number
  last_used_ms: number | null
}

const toS3Key = (r: S3KeyRow): S3KeyRecord => ({
  id: r.id,
  user: r.user,
  sealed: r.sealed,
  permissions: r.permissions === null ? null : fromBits(r.permissions),
  created: r.created_ms,
  last_used: r.last_used_ms,
})

export function sqliteS3Keys(db: Database.Database): S3KeyStore {
  const q = {
    userExists: db.prepare<[string], { one: number }>('SELECT 1 AS one FROM gateway_users WHERE name = ?'),
    addS3Key: db.prepare('INSERT INTO s3_keys (id, user, sealed, permissions, created_ms, last_used_ms) VALUES (@id, @user, @sealed, @permissions, @created_ms, @last_used_ms)'),
    getS3Key: db.prepare<[string], S3KeyRow>('SELECT * FROM s3_keys WHERE id = ?'),
    userS3Keys: db.prepare<[string], S3KeyRow>('SELECT * FROM s3_keys WHERE user = ? ORDER BY created_ms, rowid'),
    touchS3Key: db.prepare('UPDATE s3_keys SET last_used_ms = ? WHERE id = ?'),
    setPermissions: db.prepare('UPDATE s3_keys SET permissions = ? WHERE user = ? AND id = ?'),
    deleteS3Key: db.prepare('DELETE FROM s3_keys WHERE user = ? AND id = ?'),
  }
  const addS3Key = db.transaction((k: S3KeyRecord): 'added' | 'no-user' => {
    if (q.userExists.get(k.user) === undefined) return 'no-user'
    q.addS3Key.run({ id: k.id, user: k.user, sealed: k.sealed, permissions: k.permissions === null ? null : toBits(k.permissions), created_ms: k.created, last_used_ms: k.last_used })
    return 'added'
  })
  return {
    async addS3Key(key) {
      return addS3Key(key)
    },
    async getS3Key(id) {
      const r = q.getS3Key.get(id)
      return r ? toS3Key(r) : null
    },
    async listS3Keys(user) {
      return q.userS3Keys.all(user).map(toS3Key)
    },
    async touchS3Key(id, atMs) {
      q.touchS3Key.run(atMs, id)
    },
    async setS3KeyPermissions(user, id, permissions) {
      return q.setPermissions.run(permissions === null ? null : toBits(permissions), user, id).changes > 0
    },
    async deleteS3Key(user, id) {
      return q.deleteS3Key.run(user, id).changes > 0
    },
  }
}
