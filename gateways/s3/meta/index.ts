/**
 * @module gateways/s3/meta
 * ETags and metadata of the S3 gateway's objects (docs/s3-gateway.md, "ETags and
 * metadata"):
 *
 * - an object written through the gateway has the MD5 of its content as ETag (md5.ts;
 *   md5-of-md5s `-N` for multipart), with its Content-Type and `x-amz-meta-*`. A store
 *   that keeps metadata itself (S3: `abilities.metadata`) keeps them when they were
 *   written with the object and its ETag is the same; else they are kept in the state
 *   store, keyed by the view's identity (View.identity) and the path, together
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
import type { FsEntry, RequestContext, View } from '../../../core/view.js'
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
  /** The standard object headers the writer gave (STANDARD_HEADERS), lower-case names; absent: none. */
  readonly headers?: Readonly<Record<string, string>>
}

/** The object headers S3 keeps as the writer sent them and answers on GET and HEAD, as Content-Type. */
export const STANDARD_HEADERS = ['cache-control', 'content-disposition', 'content-encoding', 'content-language', 'expires'] as const

/**
 * A recorded `user_meta` (state store, multipart uploads) holds the standard headers too,
 * under their name behind a colon: no `x-amz-meta-*` name can have one (header names
 * are tokens), so the two never mix.
 */
const STANDARD_MARK = ':'

/** The standard object headers of a request. */
export function standardHeadersFrom(req: { header(name: string): string | undefined }): Record<string, string> {
  const out: Record<string, string> = {}
  for (const h of STANDARD_HEADERS) {
    const v = req.header(h)
    if (v !== undefined) out[h] = v
  }
  return out
}

/** `userMeta` and the standard headers as one record (`user_meta` of the state store). */
export function toRecordedMeta(userMeta: Readonly<Record<string, string>>, headers: Readonly<Record<string, string>> = {}): Record<string, string> {
  const out: Record<string, string> = { ...userMeta }
  for (const [k, v] of Object.entries(headers)) out[STANDARD_MARK + k] = v
  return out
}

/** What `toRecordedMeta` joined, apart again. */
export function fromRecordedMeta(recorded: Readonly<Record<string, string>>): { userMeta: Record<string, string>; headers: Record<string, string> } {
  const userMeta: Record<string, string> = {}
  const headers: Record<string, string> = {}
  for (const [k, v] of Object.entries(recorded)) {
    if (k.startsWith(STANDARD_MARK)) headers[k.slice(STANDARD_MARK.length)] = v
    else userMeta[k] = v
  }
  return { userMeta, headers }
}

/** S3's limit on user metadata: names (without `x-amz-meta-`) and values, UTF-8 bytes together. */
export const MAX_USER_META_BYTES = 2048
const PREFIX = 'x-amz-meta-'

/** Request headers as `userMetaFrom` reads them: names, and each value's bytes as sent. */
export interface MetaSource {
  headers(): Iterable<readonly [string, string]>
  headerBytes?(name: string): Uint8Array | undefined
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * A metadata value as text: its bytes as sent, read as UTF-8 (what clients that send
 * non-ASCII metadata send); bytes that are not UTF-8 are taken one character per byte.
 */
function metaText(req: MetaSource, name: string, value: string): string {
  const bytes = req.headerBytes?.(name)
  if (bytes === undefined) return value
  try {
    return utf8.decode(bytes)
  } catch {
    return Buffer.from(bytes).toString('latin1')
  }
}

/**
 * The `x-amz-meta-*` headers of a request, prefix dropped.
 * @throws S3Error MetadataTooLarge over 2 KB
 */
export function userMetaFrom(req: MetaSource): Record<string, string> {
  const out: Record<string, string> = {}
  let bytes = 0
  for (const [name, value] of req.headers()) {
    const n = name.toLowerCase()
    if (!n.startsWith(PREFIX) || n.length === PREFIX.length) continue
    const key = n.slice(PREFIX.length)
    const text = metaText(req, n, value)
    out[key] = text
    bytes += Buffer.byteLength(key) + Buffer.byteLength(text)
  }
  if (bytes > MAX_USER_META_BYTES) {
    throw new S3Error('MetadataTooLarge', `Your metadata headers exceed the maximum allowed metadata size (${MAX_USER_META_BYTES} bytes).`, 400, {
      Size: String(bytes),
      MaxSizeAllowed: String(MAX_USER_META_BYTES),
    })
  }
  return out
}

/**
 * A metadata value as a reply header: as stored when it is printable ASCII, else
 * RFC 2047 encoded (`=?UTF-8?B?...?=`), as S3 answers values outside US-ASCII.
 */
export function metaHeaderValue(v: string): string {
  return /^[\x20-\x7e]*$/.test(v) ? v : `=?UTF-8?B?${Buffer.from(v, 'utf8').toString('base64')}?=`
}

/** The reply headers of an object's metadata: `x-amz-meta-*` (the ETag and Content-Type are the caller's to place). */
export function userMetaHeaders(meta: ObjectMetaValue): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(meta.userMeta)) out[PREFIX + k] = metaHeaderValue(v)
  return out
}

/** For calls made without a request's context (listings): short, not cancelled. */
const detached = (): RequestContext => ({ requestId: 's3-meta', signal: new AbortController().signal })

/** What the object operations use (gateways/s3/objects.ts, copy.ts, multipart's Complete). */
export interface ObjectMetaStore {
  get(fs: View, path: string, entry: FsEntry, ctx?: RequestContext): Promise<ObjectMetaValue>
  /** What `get` without `ctx` gives (a listing), for a page of files at once: one state-store call. */
  getMany(fs: View, files: readonly { readonly path: string; readonly entry: FsEntry }[]): Promise<ObjectMetaValue[]>
  /** After the object at `path` was written (`entry`: as committed). */
  put(fs: View, path: string, entry: FsEntry, meta: ObjectMetaValue, ctx?: RequestContext): Promise<void>
  /** After the object at `path` was deleted. */
  forget(fs: View, path: string): Promise<void>
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
  async get(fs: View, path: string, entry: FsEntry, ctx?: RequestContext): Promise<ObjectMetaValue> {
    const rec = entry.mtimeMs === null ? null : await this.#state.getObjectMeta(fs.identity, path)
    const recorded = fromRecord(rec, entry)
    if (recorded) return recorded
    if (ctx && fs.abilities.metadata) return native(await fs.metadata(ctx, path))
    return withoutRecord(fs, path, entry)
  }

  async getMany(fs: View, files: readonly { readonly path: string; readonly entry: FsEntry }[]): Promise<ObjectMetaValue[]> {
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
  async put(fs: View, path: string, entry: FsEntry, meta: ObjectMetaValue, ctx: RequestContext = detached()): Promise<void> {
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
      user_meta: toRecordedMeta(meta.userMeta, meta.headers),
    })
  }

  /** After a delete (or a write whose result cannot be recorded). */
  async forget(fs: View, path: string): Promise<void> {
    await this.#state.deleteObjectMeta(fs.identity, path)
  }
}

/** What the record says, when it still holds for the file (same size and time). */
function fromRecord(rec: ObjectMetaRecord | null, entry: FsEntry): ObjectMetaValue | null {
  if (!rec || rec.size !== entry.size || rec.mtime_ms !== entry.mtimeMs) return null
  const { userMeta, headers } = fromRecordedMeta(rec.user_meta)
  return { etag: rec.etag, userMeta, ...(Object.keys(headers).length === 0 ? {} : { headers }), ...(rec.content_type === null ? {} : { contentType: rec.content_type }) }
}

/** A file with no record: the store's own ETag (S3), else the stable one. */
function withoutRecord(fs: View, path: string, entry: FsEntry): ObjectMetaValue {
  if (entry.etag !== undefined && entry.etag !== '') return { etag: entry.etag, userMeta: {} }
  return { etag: stableEtag(fs.identity, path, entry), userMeta: {} }
}

const native = (m: StoredMetadata): ObjectMetaValue => ({ etag: m.etag, userMeta: m.userMeta, ...(m.contentType === undefined ? {} : { contentType: m.contentType }) })

/**
 * What the store kept is what was asked for (no Content-Type asked: the store's default
 * is fine). A store keeps no standard headers (core/driver's metadata has none): asked
 * for, they are recorded.
 */
function sameMeta(kept: ObjectMetaValue, asked: ObjectMetaValue): boolean {
  if (asked.headers !== undefined && Object.keys(asked.headers).length > 0) return false
  if (asked.contentType !== undefined && kept.contentType !== asked.contentType) return false
  const a = Object.entries(asked.userMeta)
  return a.length === Object.keys(kept.userMeta).length && a.every(([k, v]) => kept.userMeta[k] === v)
}
