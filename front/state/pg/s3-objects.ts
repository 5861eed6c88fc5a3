/** @module front/state/pg/s3-objects — the S3 gateway's object metadata in PostgreSQL (core/state/s3-objects.ts). */
import type { ObjectMetaRecord, ObjectMetaStore } from '../../../core/state.js'
import { type PgDb, json } from './db.js'

const META = 'storage, path, size, mtime_ms, etag, content_type, user_meta'

export function pgObjectMeta({ query, one, all }: PgDb): ObjectMetaStore {
  return {
    async putObjectMeta(m) {
      await query(
        `INSERT INTO s3_object_meta (storage, path, size, mtime_ms, etag, content_type, user_meta) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (storage, path) DO UPDATE SET size = EXCLUDED.size, mtime_ms = EXCLUDED.mtime_ms, etag = EXCLUDED.etag,
           content_type = EXCLUDED.content_type, user_meta = EXCLUDED.user_meta`,
        [m.storage, m.path, m.size, m.mtime_ms, m.etag, m.content_type, json(m.user_meta)],
      )
    },
    getObjectMeta: (storage, path) => one(`SELECT ${META} FROM s3_object_meta WHERE storage = $1 AND path = $2`, [storage, path]),
    async getObjectMetas(storage, paths) {
      const out = new Map<string, ObjectMetaRecord>()
      if (paths.length === 0) return out
      const rows = await all<ObjectMetaRecord>(`SELECT ${META} FROM s3_object_meta WHERE storage = $1 AND path = ANY($2::text[])`, [storage, paths])
      for (const r of rows) out.set(r.path, r)
      return out
    },
    async deleteObjectMeta(storage, path) {
      await query('DELETE FROM s3_object_meta WHERE storage = $1 AND path = $2', [storage, path])
    },
  }
}
