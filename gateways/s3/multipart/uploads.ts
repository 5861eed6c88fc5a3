/**
 * @module gateways/s3/multipart/uploads
 * S3 multipart uploads over any storage (docs/s3-gateway.md, "Multipart uploads"):
 *
 * - **records** in the state store (who created the upload, for which bucket and key,
 *   its Content-Type and metadata; each part's number, size, MD5 and staging file), so
 *   only keys of the same user see an upload and a restart loses nothing;
 * - **parts** staged privately on disk (staging.ts), streamed as they arrive: memory is
 *   one chunk whatever the part's size. A part re-sent replaces the previous one
 *   atomically (one record swap);
 * - **Complete** checks the part list, then streams the parts in order into one file
 *   opened on the user's view: the object appears atomically at the handle's close, with
 *   the md5-of-md5s `-N` ETag; the staging goes. A Complete repeated afterwards answers
 *   the same (the upload's record is kept, completed, until it expires);
 * - **Abort** and **expiry** remove the records and the staging folder: nothing is left.
 *
 * Errors S3 defines are thrown as S3Error; the storage's own failures stay FsErrors,
 * mapped by the gateway's one table.
 */
import { FsError, isFsError } from '../../../core/errors.js'
import { isCanonical, parentOf, resolveProtocolPath } from '../../../core/paths.js'
import type { FsEntry, OpenFlags, ProtocolFs } from '../../../core/protocol-fs.js'
import type { MultipartPartRecord, MultipartUploadRecord, StateStore } from '../../../core/state.js'
import type { RequestContext } from '../../../core/storage.js'
import { S3Error } from '../errors.js'
import { type ObjectMeta, multipartEtag, unquoteEtag } from '../meta/index.js'
import { PartStaging, PartTooLarge, UPLOAD_ID, UploadGone, newUploadId } from './staging.js'
import type { RequestedPart } from './xml.js'

const MiB = 1024 * 1024
/** S3's limits. */
export const MAX_PART_NUMBER = 10_000
export const MIN_PART_BYTES = 5 * MiB
export const MAX_PART_BYTES = 5 * 1024 * MiB
const READ_STEP = MiB

/** What a multipart operation needs of the authenticated caller (the S3 gateway's `S3Caller` has it). */
export interface MultipartCaller {
  /** The gateway user the key belongs to: uploads are visible to that user's keys only. */
  readonly user: string
  readonly fs: ProtocolFs
  /** Verified as it is read: throws at its end on a bad signature, so nothing is kept before it ended. */
  readonly body: AsyncIterable<Uint8Array>
  readonly contentLength: number | null
}

export interface MultipartOptions {
  readonly state: StateStore
  /** `<data_dir>/s3-multipart`. */
  readonly stagingDir: string
  /** Where the object's ETag and metadata are recorded at Complete (gateways/s3/meta/). */
  readonly meta: Pick<ObjectMeta, 'put'>
  /** Uploads not completed this long after their creation are removed (`s3.multipart_expiry_hours`). */
  readonly expiryMs: number
  /** Smallest part but the last (default 5 MiB, S3's). */
  readonly minPartBytes?: number
  readonly log?: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void
}

export interface PartInfo {
  readonly number: number
  readonly etag: string
  readonly size: number
  readonly modified: number
}

const FILE_WRITE: OpenFlags = { read: false, write: true, append: false, create: true, truncate: true, exclusive: false }
const FILE_READ: OpenFlags = { read: true, write: false, append: false, create: false, truncate: false, exclusive: false }

export const noSuchUpload = (id: string) =>
  new S3Error('NoSuchUpload', 'The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.', 404, { UploadId: id })

const accessDenied = () => new S3Error('AccessDenied', 'Access Denied', 403)

/**
 * The path of an object in the user's view: `/<bucket>/<key>`. A key that would not be
 * stored under that exact name (`..`, `.`, empty segments, a trailing `/`, control
 * characters) is refused, never resolved elsewhere.
 */
export function objectPath(bucket: string, key: string): string {
  const raw = `/${bucket}/${key}`
  if (Buffer.byteLength(key) > 1024) throw new S3Error('KeyTooLongError', 'Your key is too long', 400)
  let path: string
  try {
    path = resolveProtocolPath('/', raw)
  } catch {
    path = ''
  }
  if (key === '' || path !== raw || !isCanonical(path)) {
    throw new S3Error('InvalidArgument', 'This key cannot be stored on this storage: empty, ".", ".." and trailing "/" segments, backslashes and control characters are refused.', 400, { Key: key })
  }
  return path
}

export class MultipartUploads {
  readonly #o: MultipartOptions
  readonly #staging: PartStaging
  readonly #minPart: number
  /** Uploads being completed in this process: a second Complete waits for none, it is refused. */
  readonly #completing = new Set<string>()
  #timer: NodeJS.Timeout | null = null

  constructor(opts: MultipartOptions) {
    this.#o = opts
    this.#staging = new PartStaging(opts.stagingDir)
    this.#minPart = opts.minPartBytes ?? MIN_PART_BYTES
  }

  /** Sweeps now, then every quarter of the expiry time (at most hourly), until `stop`. */
  async start(): Promise<void> {
    const every = Math.max(1000, Math.min(this.#o.expiryMs / 4, 3_600_000))
    this.#timer = setInterval(() => {
      this.sweep({ startup: false }).catch((err: unknown) => this.#o.log?.('warn', 's3 multipart sweep failed', { error: String(err) }))
    }, every)
    this.#timer.unref()
    await this.sweep({ startup: true })
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
  }

  async create(ctx: RequestContext, caller: MultipartCaller, bucket: string, key: string, contentType: string | null, userMeta: Readonly<Record<string, string>>): Promise<string> {
    if (caller.fs.readOnly) throw accessDenied()
    objectPath(bucket, key)
    await this.#bucketExists(ctx, caller.fs, bucket)
    const id = newUploadId()
    const rec: MultipartUploadRecord = { id, user: caller.user, bucket, key, created: Date.now(), content_type: contentType, user_meta: userMeta, completed_etag: null }
    await this.#o.state.putMultipartUpload(rec)
    try {
      await this.#staging.create(id)
    } catch (err) {
      await this.#o.state.deleteMultipartUpload(id)
      throw err
    }
    return id
  }

  /** Stores a part from the request body. `contentMd5`: the Content-MD5 header (base64), when sent. */
  async uploadPart(caller: MultipartCaller, bucket: string, key: string, id: string, partNumber: string | null, contentMd5: string | undefined): Promise<string> {
    const number = this.#partNumber(partNumber)
    await this.#upload(caller, bucket, key, id, { write: true })
    if (caller.contentLength !== null && caller.contentLength > MAX_PART_BYTES) throw tooLarge()
    return this.#store(id, number, caller.body, (md5) => {
      if (contentMd5 !== undefined && Buffer.from(md5, 'hex').toString('base64') !== contentMd5.trim()) {
        throw new S3Error('BadDigest', 'The Content-MD5 you specified did not match what we received.', 400)
      }
    })
  }

  /**
   * UploadPartCopy: a part made of (a range of) an object the caller may read, read
   * through the caller's own view.
   */
  async copyPart(
    ctx: RequestContext,
    caller: MultipartCaller,
    bucket: string,
    key: string,
    id: string,
    partNumber: string | null,
    source: { readonly path: string; readonly range: string | undefined },
  ): Promise<{ etag: string; modified: number }> {
    const number = this.#partNumber(partNumber)
    await this.#upload(caller, bucket, key, id, { write: true })
    let entry: FsEntry
    try {
      entry = await caller.fs.stat(ctx, source.path)
    } catch (err) {
      if (isFsError(err) && (err.code === 'ENOENT' || err.code === 'ENOTDIR')) throw noSuchKey()
      throw err
    }
    if (entry.kind !== 'file') throw noSuchKey()
    const { start, end } = copyRange(source.range, entry.size)
    if (end - start + 1 > MAX_PART_BYTES) throw tooLarge()
    const h = await caller.fs.open({ ...ctx, signal: ctx.signal }, source.path, FILE_READ)
    async function* bytes(): AsyncIterable<Uint8Array> {
      try {
        for (let off = start; off <= end; ) {
          const chunk = await h.read(off, Math.min(READ_STEP, end - off + 1))
          if (chunk.byteLength === 0) throw new FsError('EIO', `${source.path}: the file shrank while it was copied`, { path: source.path })
          off += chunk.byteLength
          yield chunk
        }
      } finally {
        await h.close().catch(() => {})
      }
    }
    const etag = await this.#store(id, number, bytes())
    return { etag, modified: Date.now() }
  }

  /**
   * Checks the part list and makes the object, atomically, from the staged parts.
   * @returns the object's ETag (unquoted)
   */
  async complete(ctx: RequestContext, caller: MultipartCaller, bucket: string, key: string, id: string, requested: readonly RequestedPart[]): Promise<string> {
    const up = await this.#upload(caller, bucket, key, id, { write: true, completed: true })
    if (up.completed_etag !== null) return up.completed_etag // a repeated Complete
    if (this.#completing.has(id)) throw new S3Error('OperationAborted', 'A conflicting operation is in progress on this upload. Please try again.', 409)
    this.#completing.add(id)
    try {
      const path = objectPath(bucket, key)
      const staged = new Map((await this.#o.state.listMultipartParts(id)).map((p) => [p.number, p]))
      const chosen: MultipartPartRecord[] = []
      let prev = 0
      for (const r of requested) {
        if (r.number <= prev) throw new S3Error('InvalidPartOrder', 'The list of parts was not in ascending order. The parts list must be specified in order by part number.', 400, { UploadId: id })
        prev = r.number
        const p = staged.get(r.number)
        if (!p || unquoteEtag(r.etag) !== p.etag) {
          throw new S3Error('InvalidPart', 'One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part\'s entity tag.', 400, {
            UploadId: id,
            PartNumber: String(r.number),
          })
        }
        chosen.push(p)
      }
      chosen.forEach((p, i) => {
        if (i < chosen.length - 1 && p.size < this.#minPart) {
          throw new S3Error('EntityTooSmall', 'Your proposed upload is smaller than the minimum allowed object size.', 400, {
            ProposedSize: String(p.size),
            MinSizeAllowed: String(this.#minPart),
            PartNumber: String(p.number),
          })
        }
      })
      await ensureParents(ctx, caller.fs, path)
      const h = await caller.fs.open(ctx, path, FILE_WRITE)
      try {
        let off = 0
        for (const p of chosen) {
          for await (const chunk of this.#staging.read(id, p.file)) {
            await h.write(off, chunk)
            off += chunk.byteLength
          }
        }
        await h.close()
      } catch (err) {
        h.abort()
        if ((err as NodeJS.ErrnoException).code === 'ENOENT' && !isFsError(err)) throw noSuchUpload(id) // aborted or swept meanwhile
        throw err
      }
      const etag = multipartEtag(chosen.map((p) => p.etag))
      const entry = await caller.fs.stat(ctx, path)
      await this.#o.meta.put(caller.fs, path, entry, { etag, userMeta: up.user_meta, ...(up.content_type === null ? {} : { contentType: up.content_type }) })
      await this.#o.state.completeMultipartUpload(id, etag)
      await this.#staging.remove(id)
      return etag
    } finally {
      this.#completing.delete(id)
    }
  }

  async abort(caller: MultipartCaller, bucket: string, key: string, id: string): Promise<void> {
    await this.#upload(caller, bucket, key, id, { write: true })
    await this.#remove(id)
  }

  /** Parts after `marker`, at most `max`. */
  async listParts(caller: MultipartCaller, bucket: string, key: string, id: string, marker: number, max: number): Promise<{ upload: MultipartUploadRecord; parts: PartInfo[]; truncated: boolean }> {
    const upload = await this.#upload(caller, bucket, key, id, { write: false })
    const after = (await this.#o.state.listMultipartParts(id)).filter((p) => p.number > marker)
    const parts = after.slice(0, max).map(({ number, etag, size, modified }) => ({ number, etag, size, modified }))
    return { upload, parts, truncated: after.length > max }
  }

  /** The caller's uploads in progress in `bucket`, ordered by key (UTF-8 bytes), then creation. */
  async listUploads(caller: MultipartCaller, bucket: string): Promise<MultipartUploadRecord[]> {
    const all = await this.#o.state.listMultipartUploads(caller.user, bucket)
    return all.sort((a, b) => Buffer.compare(Buffer.from(a.key), Buffer.from(b.key)) || a.created - b.created || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  }

  /**
   * Removes expired uploads (completed or not) with their staging, and staging folders no
   * upload owns (a process killed between the two). At start-up also the part files no
   * record names (a part cut off by a crash).
   */
  async sweep(opts: { readonly startup: boolean }): Promise<number> {
    let removed = 0
    for (const up of await this.#o.state.expiredMultipartUploads(Date.now() - this.#o.expiryMs)) {
      await this.#remove(up.id)
      if (up.completed_etag === null) removed++
    }
    for (const name of await this.#staging.entries()) {
      const up = UPLOAD_ID.test(name) ? await this.#o.state.getMultipartUpload(name) : null
      if (!up || up.completed_etag !== null) {
        await this.#staging.removeEntry(name)
        continue
      }
      if (!opts.startup) continue
      const known = new Set((await this.#o.state.listMultipartParts(name)).map((p) => p.file))
      for (const f of await this.#staging.files(name)) if (!known.has(f)) await this.#staging.removePart(name, f)
    }
    if (removed > 0) this.#o.log?.('info', 's3 multipart uploads expired', { count: removed })
    return removed
  }

  // Internals ----------------------------------------------------------------

  /**
   * Streams a part to staging and records it, replacing one of the same number; `check`
   * may refuse it (a bad digest) before it is recorded. @returns its MD5
   */
  async #store(id: string, number: number, body: AsyncIterable<Uint8Array>, check?: (md5: string) => void): Promise<string> {
    let part: { file: string; size: number; md5: string }
    try {
      part = await this.#staging.write(id, number, body, MAX_PART_BYTES)
    } catch (err) {
      if (err instanceof UploadGone) throw noSuchUpload(id)
      if (err instanceof PartTooLarge) throw tooLarge()
      throw err
    }
    try {
      check?.(part.md5)
    } catch (err) {
      await this.#staging.removePart(id, part.file)
      throw err
    }
    const prev = await this.#o.state.putMultipartPart({ upload_id: id, number, size: part.size, etag: part.md5, file: part.file, modified: Date.now() })
    if (prev === 'no-upload') {
      await this.#staging.removePart(id, part.file) // aborted while it streamed in
      throw noSuchUpload(id)
    }
    if (prev !== null && !this.#completing.has(id)) await this.#staging.removePart(id, prev)
    return part.md5
  }

  async #remove(id: string): Promise<void> {
    await this.#o.state.deleteMultipartUpload(id)
    await this.#staging.remove(id)
  }

  /**
   * The upload, when `id` names one of this user's for this bucket and key (anything
   * else is NoSuchUpload: another user's upload is not told apart from none). A completed
   * upload only for `completed` (a repeated Complete).
   */
  async #upload(caller: MultipartCaller, bucket: string, key: string, id: string, opts: { write: boolean; completed?: boolean }): Promise<MultipartUploadRecord> {
    if (opts.write && caller.fs.readOnly) throw accessDenied()
    const up = UPLOAD_ID.test(id) ? await this.#o.state.getMultipartUpload(id) : null
    if (!up || up.user !== caller.user || up.bucket !== bucket || up.key !== key) throw noSuchUpload(id)
    if (up.completed_etag !== null && !opts.completed) throw noSuchUpload(id)
    if (Date.now() - up.created > this.#o.expiryMs) throw noSuchUpload(id) // expired, not swept yet
    return up
  }

  #partNumber(raw: string | null): number {
    const n = raw !== null && /^\d{1,5}$/.test(raw) ? Number(raw) : NaN
    if (!(n >= 1 && n <= MAX_PART_NUMBER)) {
      throw new S3Error('InvalidArgument', `Part number must be an integer between 1 and ${MAX_PART_NUMBER}, inclusive`, 400, {
        ArgumentName: 'partNumber',
        ArgumentValue: raw ?? '',
      })
    }
    return n
  }

  async #bucketExists(ctx: RequestContext, fs: ProtocolFs, bucket: string): Promise<void> {
    const entry = await fs.stat(ctx, `/${bucket}`).catch((err: unknown) => {
      if (isFsError(err) && (err.code === 'ENOENT' || err.code === 'ENOTDIR')) return null
      throw err
    })
    if (!entry || entry.kind !== 'dir') throw new S3Error('NoSuchBucket', 'The specified bucket does not exist', 404, { BucketName: bucket })
  }
}

const tooLarge = () => new S3Error('EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size', 400, { MaxSizeAllowed: String(MAX_PART_BYTES) })
const noSuchKey = () => new S3Error('NoSuchKey', 'The specified key does not exist.', 404)

/** `x-amz-copy-source-range: bytes=first-last` (both required, inside the object). */
function copyRange(raw: string | undefined, size: number): { start: number; end: number } {
  if (raw === undefined) return { start: 0, end: size - 1 }
  const m = /^bytes=(\d+)-(\d+)$/.exec(raw.trim())
  if (!m) throw new S3Error('InvalidArgument', 'The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy', 400)
  const start = Number(m[1])
  const end = Number(m[2])
  if (start > end || end >= size) throw new S3Error('InvalidRange', 'The requested range is not satisfiable', 416, { RangeRequested: raw, ActualObjectSize: String(size) })
  return { start, end }
}

/** The folders above `path` (the bucket excluded), made where missing: a key's `/` are folders here. */
async function ensureParents(ctx: RequestContext, fs: ProtocolFs, path: string): Promise<void> {
  const dirs: string[] = []
  for (let d = parentOf(path); d.split('/').length > 2; d = parentOf(d)) dirs.unshift(d)
  for (const d of dirs) {
    try {
      await fs.mkdir(ctx, d)
    } catch (err) {
      if (!(isFsError(err) && err.code === 'EEXIST')) throw err
    }
  }
}
