/** @module front/state/sqlite/s3-objects — the S3 gateway's object metadata in SQLite (core/state/s3-objects.ts). */
import type Database from 'better-sqlite3'
import type { ObjectMetaRecord, ObjectMetaStore } from '../../../core/state.js'

interface ObjectMetaRow {
  storage: string
  path: string
  size: number
  mtime_ms: number | null
  etag: string
  content_type: string | null
  user_meta: string
}

const toObjectMeta = (r: ObjectMetaRow): ObjectMetaRecord => ({ ...r, user_meta: JSON.parse(r.user_meta) as Record<string, string> })

export function sqliteObjectMeta(db: Database.Database): ObjectMetaStore {
  const q = {
    putMeta: db.prepare(
      `INSERT OR REPLACE INTO s3_object_meta (storage, path, size, mtime_ms, etag, content_type, user_meta)
       VALUES (@storage, @path, @size, @mtime_ms, @etag, @content_type, @user_meta)`,
    ),
    getMeta: db.prepare<[string, string], ObjectMetaRow>('SELECT * FROM s3_object_meta WHERE storage = ? AND path = ?'),
    /** The paths as one JSON array: one statement whatever their number. */
    getMetas: db.prepare<[string, string], ObjectMetaRow>('SELECT * FROM s3_object_meta WHERE storage = ? AND path IN (SELECT value FROM json_each(?))'),
    deleteMeta: db.prepare('DELETE FROM s3_object_meta WHERE storage = ? AND path = ?'),
  }
  return {
    async putObjectMeta(m) {
      q.putMeta.run({ ...m, user_meta: JSON.stringify(m.user_meta) })
    },
    async getObjectMeta(storage, path) {
      const r = q.getMeta.get(storage, path)
      return r ? toObjectMeta(r) : null
    },
    async getObjectMetas(storage, paths) {
      const out = new Map<string, ObjectMetaRecord>()
      if (paths.length === 0) return out
      for (const r of q.getMetas.all(storage, JSON.stringify(paths))) out.set(r.path, toObjectMeta(r))
      return out
    },
    async deleteObjectMeta(storage, path) {
      q.deleteMeta.run(storage, path)
    },
  }
}
