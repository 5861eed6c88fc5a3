/** @module front/state/sqlite/tus-uploads — resumable uploads' records in SQLite (core/state/tus-uploads.ts). */
import type Database from 'better-sqlite3'
import type { TusUploadRecord, TusUploadStore } from '../../../core/state.js'

interface TusUploadRow {
  id: string
  upload: string
  created_ms: number
}

const toTusUpload = (r: TusUploadRow): TusUploadRecord => ({ id: r.id, upload: r.upload, created: r.created_ms })

export function sqliteTusUploads(db: Database.Database): TusUploadStore {
  const q = {
    putTus: db.prepare('INSERT OR REPLACE INTO tus_uploads (id, upload, created_ms) VALUES (?, ?, ?)'),
    getTus: db.prepare<[string], TusUploadRow>('SELECT * FROM tus_uploads WHERE id = ?'),
    deleteTus: db.prepare('DELETE FROM tus_uploads WHERE id = ?'),
    expiredTus: db.prepare<[number], { id: string }>('SELECT id FROM tus_uploads WHERE created_ms < ? ORDER BY created_ms, id'),
  }
  return {
    async putTusUpload(u) {
      q.putTus.run(u.id, u.upload, u.created)
    },
    async getTusUpload(id) {
      const r = q.getTus.get(id)
      return r ? toTusUpload(r) : null
    },
    async deleteTusUpload(id) {
      return q.deleteTus.run(id).changes > 0
    },
    async expiredTusUploads(beforeMs) {
      return q.expiredTus.all(beforeMs).map((r) => r.id)
    },
  }
}
