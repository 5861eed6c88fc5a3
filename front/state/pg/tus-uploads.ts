/** @module front/state/pg/tus-uploads — resumable uploads' records in PostgreSQL (core/state/tus-uploads.ts). */
import type { TusUploadStore } from '../../../core/state.js'
import type { PgDb } from './db.js'

export function pgTusUploads({ query, one, all, changed }: PgDb): TusUploadStore {
  return {
    async putTusUpload(u) {
      await query('INSERT INTO tus_uploads (id, upload, created_ms) VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET upload = EXCLUDED.upload, created_ms = EXCLUDED.created_ms', [
        u.id,
        u.upload,
        u.created,
      ])
    },
    getTusUpload: (id) => one(`SELECT id, upload, created_ms AS created FROM tus_uploads WHERE id = $1`, [id]),
    deleteTusUpload: (id) => changed('DELETE FROM tus_uploads WHERE id = $1', [id]),
    async expiredTusUploads(beforeMs) {
      return (await all<{ id: string }>('SELECT id FROM tus_uploads WHERE created_ms < $1 ORDER BY created_ms, id', [beforeMs])).map((r) => r.id)
    },
  }
}
