/** @module front/state/pg/s3-multipart — the S3 gateway's multipart uploads and parts in PostgreSQL (core/state/s3-multipart.ts). */
import type { MultipartPartRecord, MultipartStore } from '../../../core/state.js'
import { type PgDb, json } from './db.js'

const UPLOAD = 'id, user_name AS "user", bucket, key, created_ms AS created, content_type, user_meta, completed_etag'
const PART = 'upload_id, number, size, etag, file, modified_ms AS modified'

export function pgMultipart({ query, one, all, changed, transaction }: PgDb): MultipartStore {
  return {
    async putMultipartUpload(u) {
      await query(
        `INSERT INTO s3_multipart_uploads (id, user_name, bucket, key, created_ms, content_type, user_meta, completed_etag) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (id) DO UPDATE SET user_name = EXCLUDED.user_name, bucket = EXCLUDED.bucket, key = EXCLUDED.key, created_ms = EXCLUDED.created_ms,
           content_type = EXCLUDED.content_type, user_meta = EXCLUDED.user_meta, completed_etag = EXCLUDED.completed_etag`,
        [u.id, u.user, u.bucket, u.key, u.created, u.content_type, json(u.user_meta), u.completed_etag],
      )
    },
    getMultipartUpload: (id) => one(`SELECT ${UPLOAD} FROM s3_multipart_uploads WHERE id = $1`, [id]),
    listMultipartUploads: (user, bucket) =>
      all(`SELECT ${UPLOAD} FROM s3_multipart_uploads WHERE user_name = $1 AND bucket = $2 AND completed_etag IS NULL ORDER BY key, created_ms, id`, [user, bucket]),
    expiredMultipartUploads: (beforeMs) => all(`SELECT ${UPLOAD} FROM s3_multipart_uploads WHERE created_ms < $1 ORDER BY created_ms, id`, [beforeMs]),
    completeMultipartUpload: (id, etag) =>
      transaction(async (c) => {
        // The upload's row lock first: a part being recorded finishes before, or finds the upload completed after.
        const done = await c.query('UPDATE s3_multipart_uploads SET completed_etag = $1 WHERE id = $2', [etag, id])
        await c.query('DELETE FROM s3_multipart_parts WHERE upload_id = $1', [id])
        return (done.rowCount ?? 0) > 0
      }),
    // Its parts go with it (ON DELETE CASCADE).
    deleteMultipartUpload: (id) => changed('DELETE FROM s3_multipart_uploads WHERE id = $1', [id]),
    putMultipartPart: (p: MultipartPartRecord) =>
      transaction(async (c): Promise<string | null | 'no-upload'> => {
        // Holding the open upload's row serialises its parts, its completion and its removal,
        // so the part replaced is the one this call read (its file is the caller's to remove).
        const open = await c.query('SELECT 1 FROM s3_multipart_uploads WHERE id = $1 AND completed_etag IS NULL FOR UPDATE', [p.upload_id])
        if (open.rowCount === 0) return 'no-upload'
        const prev = await c.query<{ file: string }>('SELECT file FROM s3_multipart_parts WHERE upload_id = $1 AND number = $2', [p.upload_id, p.number])
        await c.query(
          `INSERT INTO s3_multipart_parts (upload_id, number, size, etag, file, modified_ms) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (upload_id, number) DO UPDATE SET size = EXCLUDED.size, etag = EXCLUDED.etag, file = EXCLUDED.file, modified_ms = EXCLUDED.modified_ms`,
          [p.upload_id, p.number, p.size, p.etag, p.file, p.modified],
        )
        const file = prev.rows[0]?.file
        return file !== undefined && file !== p.file ? file : null
      }),
    listMultipartParts: (id) => all(`SELECT ${PART} FROM s3_multipart_parts WHERE upload_id = $1 ORDER BY number`, [id]),
  }
}
