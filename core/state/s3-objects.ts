/**
 * @module core/state/s3-objects
 * The S3 gateway's object metadata where the storage keeps none (gateways/s3/meta/). Part of
 * the state store (core/state.ts).
 */

/**
 * What the S3 gateway keeps of an object written through it, where the storage cannot
 * keep it itself (gateways/s3/meta/): valid while the file still has `size` and `mtime_ms`.
 */
export interface ObjectMetaRecord {
  /** A hash of the storage's identity (never a credential) and the view's root. */
  readonly storage: string
  /** Canonical path inside that view. */
  readonly path: string
  readonly size: number
  readonly mtime_ms: number | null
  /** S3's ETag without quotes: hex MD5, or md5-of-md5s `-N`. */
  readonly etag: string
  readonly content_type: string | null
  /** `x-amz-meta-*` without the prefix, lower-case names. */
  readonly user_meta: Readonly<Record<string, string>>
}

export interface ObjectMetaStore {
  /** Replaces the record of (storage, path). */
  putObjectMeta(meta: ObjectMetaRecord): Promise<void>
  getObjectMeta(storage: string, path: string): Promise<ObjectMetaRecord | null>
  /** The records of those of `paths` that have one (a listing's page: one call), by path. */
  getObjectMetas(storage: string, paths: readonly string[]): Promise<Map<string, ObjectMetaRecord>>
  deleteObjectMeta(storage: string, path: string): Promise<void>
}
