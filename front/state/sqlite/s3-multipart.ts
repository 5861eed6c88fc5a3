/** @module front/state/sqlite/s3-multipart — the S3 gateway's multipart uploads and parts in SQLite (core/state/s3-multipart.ts). */
import type Database from 'better-sqlite3'
import type { MultipartPartRecord, MultipartStore, MultipartUploadRecord } from '../../../core/state.js'

interface UploadRow {
  id: string
  user: string
  bucket: string
  key: string
  created_ms: number
  content_type: string | null
  user_meta: string
  completed_etag: string | null
}
interface PartRow {
  upload_id: string
  number: number
  size: number
  etag: string
  file: string
  modified_ms: number
}

const toUpload = ({ created_ms, user_meta, ...r }: UploadRow): MultipartUploadRecord => ({ ...r, created: created_ms, user_meta: JSON.parse(user_meta) as Record<string, string> })
const toPart = ({ modified_ms, ...r }: PartRow): MultipartPartRecord => ({ ...r, modified: modified_ms })

export function sqliteMultipart(db: Database.Database): MultipartStore {
  const q = {
    putUpload: db.prepare(
      `INSERT OR REPLACE INTO s3_multipart_uploads (id, user, bucket, key, created_ms, content_type, user_meta, completed_etag)
       VALUES (@id, @user, @bucket, @key, @created_ms, @content_type, @user_meta, @completed_etag)`,
    ),
    getUpload: db.prepare<[string], UploadRow>('SELECT * FROM s3_multipart_uploads WHERE id = ?'),
    userUploads: db.prepare<[string, string], UploadRow>(
      'SELECT * FROM s3_multipart_uploads WHERE user = ? AND bucket = ? AND completed_etag IS NULL ORDER BY key, created_ms, id',
    ),
    expiredUploads: db.prepare<[number], UploadRow>('SELECT * FROM s3_multipart_uploads WHERE created_ms < ? ORDER BY created_ms, id'),
    completeUpload: db.prepare('UPDATE s3_multipart_uploads SET completed_etag = ? WHERE id = ?'),
    deleteUpload: db.prepare('DELETE FROM s3_multipart_uploads WHERE id = ?'),
    openUpload: db.prepare<[string], { one: number }>('SELECT 1 AS one FROM s3_multipart_uploads WHERE id = ? AND completed_etag IS NULL'),
    getPart: db.prepare<[string, number], PartRow>('SELECT * FROM s3_multipart_parts WHERE upload_id = ? AND number = ?'),
    putPart: db.prepare(
      `INSERT OR REPLACE INTO s3_multipart_parts (upload_id, number, size, etag, file, modified_ms)
       VALUES (@upload_id, @number, @size, @etag, @file, @modified_ms)`,
    ),
    parts: db.prepare<[string], PartRow>('SELECT * FROM s3_multipart_parts WHERE upload_id = ? ORDER BY number'),
    deleteParts: db.prepare('DELETE FROM s3_multipart_parts WHERE upload_id = ?'),
  }
  const putPart = db.transaction((p: MultipartPartRecord): string | null | 'no-upload' => {
    if (q.openUpload.get(p.upload_id) === undefined) return 'no-upload'
    const prev = q.getPart.get(p.upload_id, p.number)
    q.putPart.run({ upload_id: p.upload_id, number: p.number, size: p.size, etag: p.etag, file: p.file, modified_ms: p.modified })
    return prev && prev.file !== p.file ? prev.file : null
  })
  const completeUpload = db.transaction((id: string, etag: string): boolean => {
    q.deleteParts.run(id)
    return q.completeUpload.run(etag, id).changes > 0
  })
  const deleteUpload = db.transaction((id: string): boolean => {
    q.deleteParts.run(id)
    return q.deleteUpload.run(id).changes > 0
  })
  return {
    async putMultipartUpload(u) {
      q.putUpload.run({
        id: u.id,
        user: u.user,
        bucket: u.bucket,
        key: u.key,
        created_ms: u.created,
        content_type: u.content_type,
        user_meta: JSON.stringify(u.user_meta),
        completed_etag: u.completed_etag,
      })
    },
    async getMultipartUpload(id) {
      const r = q.getUpload.get(id)
      return r ? toUpload(r) : null
    },
    async listMultipartUploads(user, bucket) {
      return q.userUploads.all(user, bucket).map(toUpload)
    },
    async expiredMultipartUploads(beforeMs) {
      return q.expiredUploads.all(beforeMs).map(toUpload)
    },
    async completeMultipartUpload(id, etag) {
      return completeUpload(id, etag)
    },
    async deleteMultipartUpload(id) {
      return deleteUpload(id)
    },
    async putMultipartPart(p) {
      return putPart(p)
    },
    async listMultipartParts(id) {
      return q.parts.all(id).map(toPart)
    },
  }
}
