/**
 * @module gateways/s3/meta
 * ETags and metadata of the S3 gateway's objects (docs/s3-gateway.md, "ETags and
 * metadata"):
 *
 * - an object written through the gateway has the MD5 of its content as ETag (md5.ts;
 *   md5-of-md5s `-N` for multipart), with its Content-Type and `x-amz-meta-*`. A store
 *   that keeps metadata itself (S3: `abilities.metadata`) keeps them when they were
 *   written with the object and its ETag is the same; else they are kept in the state
 *   store, keyed by the view's identity (ProtocolFs.identity) and the path, together
 *   with the file's size and modification time when written;
 * - the record holds while the file keeps that size and time. A file written or changed
 *   by another door (HTTP API, SFTP, the disk itself) gets the stable ETag of etag.ts,
 *   which no client takes for an MD5, and no metadata; on a store with ETags of its own
 *   (S3), the store's ETag and metadata (an empty file gets the MD5 of
 *   nothing, which is true whoever wrote it). A storage that keeps no times
 *   keeps no records: its objects always get the stable ETag.
 *
 * Used by the object operations (PutObject, CopyObject, GetObject, HeadObject, listings)
 * and by multipart's Complete.
 */
import type { StoredMetadata } from '../../../core/driver.js'
import type { FsEntry, ProtocolFs } from '../../../core/protocol-fs.js'
import type { RequestContext } from '../../../core/storage.js'
import type { ObjectMetaRecord, StateStore } from '../../../core/state.js'
import { S3Error } from '../errors.js'
import { stableEtag } from './etag.js'

export { md5While, multipartEtag, type HashingBody } from './md5.js'
export { EMPTY_MD5, quoteEtag, stableEtag, unquoteEtag } from './etag.js'

/** What S3 tells of an object beyond its bytes. */
export interface ObjectMetaValue {
  /** Unquoted: hex MD5, md5-of-md5s `-N`, or the stable `<hex>-1` of a file known otherwise. */
  readonly etag: string
  /** As the writer gave it; absent: none recorded (the caller picks a default). */
  readonly contentType?: string
  /** `x-amz-meta-*` without the prefix, lower-case names. */
  readonly userMeta: Readonly<Record<string, string>>
}

/** S3's limit on user metadata: names (without `x-amz-meta-`) and values, UTF-8 bytes together. */
export const MAX_USER_META_BYTES = 2048
const PREFIX = 'x-amz-meta-'

/**
 * The `x-amz-meta-*` headers of a request, prefix dropped.
 * @throws S3Error MetadataTooLarge over 2 KB
 */
export function userMetaFrom(headers: Iterable<readonly [string, string]>): Record<string, string> {
  const out: Record<string, string> = {}
  let bytes = 0
  for (const [name, value] of headers) {
    const n = name.toLowerCase()
    if (!n.startsWith(PREFIX) || n.length === PREFIX.length) continue
    const key = n.slice(PREFIX.length)
    out[key] = value
    bytes += Buffer.byteLength(key) + Buffer.byteLength(value)
  }
  if (bytes > MAX_USER_META_BYTES) {
    throw new S3Error('MetadataTooLarge', `Your metadata headers exceed the maximum allowed metadata size (${MAX_USER_META_BYTES} bytes).`, 400, {
      Size: String(bytes),
      MaxSizeAllowed: String(MAX_USER_META_BYTES),
    })
  }
  return out
}

/** The reply headers of an object's metadata: `x-amz-meta-*` (the ETag and Content-Type are the caller's to place). */
export function userMetaHeaders(meta: ObjectMetaValue): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(meta.userMeta)) out[PREFIX + k] = v
  return out
}

/** For calls made without a request's context (listings): short, not cancelled. */
const detached = (): RequestContext => ({ requestId: 's3-meta', signal: new AbortController().signal })

/** What the object operations use (gateways/s3/objects.ts, copy.ts, multipart's Complete). */
export interface ObjectMetaStore {
  get(fs: ProtocolFs, path: string, entry: FsEntry, ctx?: RequestContext): Promise<ObjectMetaValue>
  /** What `get` without `ctx` gives (a listing), for a page of files at once: one state-store call. */
  getMany(fs: ProtocolFs, files: readonly { readonly path: string; readonly entry: FsEntry }[]): Promise<ObjectMetaValue[]>
  /** After the object at `path` was written (`entry`: as committed). */
  put(fs: ProtocolFs, path: string, entry: FsEntry, meta: ObjectMetaValue, ctx?: RequestContext): Promise<void>
  /** After the object at `path` was deleted. */
  forget(fs: ProtocolFs, path: string): Promise<void>
}

export class ObjectMeta implements ObjectMetaStore {
  readonly #state: StateStore

  constructor(state: StateStore) {
    this.#state = state
  }

  /**
   * The object's ETag and metadata; `entry` is the file as just stat'ed. With `ctx` (a
   * GetObject, a HeadObject) a store that keeps metadata (S3) is asked for it; without
   * (listings), only what costs no request: the record, the store's ETag in `entry`.
   */
  async get(fs: ProtocolFs, path: string, entry: FsEntry, ctx?: RequestContext): Promise<ObjectMetaValue> {
    const rec = entry.mtimeMs === null ? null : await this.#state.getObjectMeta(fs.identity, path)
    const recorded = fromRecord(rec, entry)
    if (recorded) return recorded
    if (ctx && fs.abilities.metadata) return native(await fs.metadata(ctx, path))
    return withoutRecord(fs, path, entry)
  }

  async getMany(fs: ProtocolFs, files: readonly { readonly path: string; readonly entry: FsEntry }[]): Promise<ObjectMetaValue[]> {
    const timed = files.filter((f) => f.entry.mtimeMs !== null).map((f) => f.path)
    const recs = timed.length === 0 ? new Map<string, ObjectMetaRecord>() : await this.#state.getObjectMetas(fs.identity, timed)
    return files.map((f) => fromRecord(recs.get(f.path) ?? null, f.entry) ?? withoutRecord(fs, f.path, f.entry))
  }

  /**
   * Records what an object written through the gateway is; `entry` is the file as stat'ed
   * right after the write was committed. A store that kept it all itself (S3, written
   * with `open`'s metadata and the same ETag) needs no record. Nothing is kept where the
   * storage keeps no times (the record could not be told stale).
   */
  async put(fs: ProtocolFs, path: string, entry: FsEntry, meta: ObjectMetaValue, ctx: RequestContext = detached()): Promise<void> {
    if (fs.abilities.metadata) {
      const kept = await fs.metadata(ctx, path).then(native, () => null)
      if (kept && kept.etag === meta.etag && sameMeta(kept, meta)) return this.forget(fs, path)
    }
    if (entry.mtimeMs === null || entry.kind !== 'file') return this.forget(fs, path)
    await this.#state.putObjectMeta({
      storage: fs.identity,
      path,
      size: entry.size,
      mtime_ms: entry.mtimeMs,
      etag: meta.etag,
      content_type: meta.contentType ?? null,
      user_meta: meta.userMeta,
    })
  }

  /** After a delete (or a write whose result cannot be recorded). */
  async forget(fs: ProtocolFs, path: string): Promise<void> {
    await this.#state.deleteObjectMeta(fs.identity, path)
  }
}

/** What the record says, when it still holds for the file (same size and time). */
function fromRecord(rec: ObjectMetaRecord | null, entry: FsEntry): ObjectMetaValue | null {
  if (!rec || rec.size !== entry.size || rec.mtime_ms !== entry.mtimeMs) return null
  return { etag: rec.etag, userMeta: rec.user_meta, ...(rec.content_type === null ? {} : { contentType: rec.content_type }) }
}

/** A file with no record: the store's own ETag (S3), else the stable one. */
function withoutRecord(fs: ProtocolFs, path: string, entry: FsEntry): ObjectMetaValue {
  if (entry.etag !== undefined && entry.etag !== '') return { etag: entry.etag, userMeta: {} }
  return { etag: stableEtag(fs.identity, path, entry), userMeta: {} }
}

const native = (m: StoredMetadata): ObjectMetaValue => ({ etag: m.etag, userMeta: m.userMeta, ...(m.contentType === undefined ? {} : { contentType: m.contentType }) })

/** What the store kept is what was asked for (no Content-Type asked: the store's default is fine). */
function sameMeta(kept: ObjectMetaValue, asked: ObjectMetaValue): boolean {
  if (asked.contentType !== undefined && kept.contentType !== asked.contentType) return false
  const a = Object.entries(asked.userMeta)
  return a.length === Object.keys(kept.userMeta).length && a.every(([k, v]) => kept.userMeta[k] === v)
}
