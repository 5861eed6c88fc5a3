/**
 * @module core/state/s3-multipart
 * The S3 gateway's multipart uploads and their parts (gateways/s3/multipart/). Part of the
 * state store (core/state.ts).
 */

/** An S3 multipart upload in progress, or completed a short while ago (gateways/s3/multipart/). */
export interface MultipartUploadRecord {
  /** Random, unguessable; also the name of its staging folder. */
  readonly id: string
  /** The gateway user that created it: only that user's keys see it. */
  readonly user: string
  readonly bucket: string
  readonly key: string
  readonly created: number
  readonly content_type: string | null
  readonly user_meta: Readonly<Record<string, string>>
  /** Set once completed: the object's ETag (a repeated Complete answers it again). */
  readonly completed_etag: string | null
}

/** One staged part of a multipart upload. */
export interface MultipartPartRecord {
  readonly upload_id: string
  /** 1..10000. */
  readonly number: number
  readonly size: number
  /** Hex MD5 of the part. */
  readonly etag: string
  /** The part's staging file name inside the upload's folder. */
  readonly file: string
  readonly modified: number
}

export interface MultipartStore {
  putMultipartUpload(upload: MultipartUploadRecord): Promise<void>
  getMultipartUpload(id: string): Promise<MultipartUploadRecord | null>
  /** A user's uploads not completed in `bucket`, by key then creation then id. */
  listMultipartUploads(user: string, bucket: string): Promise<MultipartUploadRecord[]>
  /** Uploads (completed or not) created before `beforeMs`, oldest first. */
  expiredMultipartUploads(beforeMs: number): Promise<MultipartUploadRecord[]>
  /** Marks an upload completed with its ETag; its parts' records go. @returns false when there was no such upload */
  completeMultipartUpload(id: string, etag: string): Promise<boolean>
  /** The upload and its parts' records. @returns false when there was no such upload */
  deleteMultipartUpload(id: string): Promise<boolean>
  /**
   * Records a part, replacing one of the same number.
   * @returns the file of the part replaced (to remove), null when none; 'no-upload' when the upload is gone or completed (nothing recorded)
   */
  putMultipartPart(part: MultipartPartRecord): Promise<string | null | 'no-upload'>
  /** An upload's parts by number. */
  listMultipartParts(id: string): Promise<MultipartPartRecord[]>
}
