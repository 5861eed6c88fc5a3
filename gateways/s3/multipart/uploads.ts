/**
 * @module gateways/s3/multipart/uploads
 * S3 multipart uploads over any storage (docs/s3-gateway.md, "Multipart uploads"):
 *
 * - **records** in the state store (who created the upload, for which bucket and key,
 *   its Content-Type and metadata; each part's number, size, MD5 and staging file), so
 *   only keys of the same user see an upload and a restart loses nothing;
 * - **parts** staged privately on disk by a worker thread (staging.ts over
 *   core/staged.ts), streamed as they arrive and hashed where they are written: memory
 *   is a few chunks whatever the part's size, and the main thread does no file I/O for
 *   them. A part re-sent replaces the previous one atomically (one record swap);
 * - **Complete** checks the part list, then commits the parts in order into the object
 *   through the user's view (`commitStaged`: one task on the thread that writes the
 *   storage reads them from the staging folder, none of their bytes comes to the main
 *   thread), while route.ts keeps the client's connection alive: the object appears
 *   atomically, with the md5-of-md5s `-N` ETag; the staging goes. A commit that fails
 *   keeps the upload as it was, for another Complete. A Complete repeated afterwards
 *   answers the same (the upload's record is kept, completed, until it expires);
 * - **Abort** and **expiry** remove the records and the staging folder: nothing is left.
 *
 * Errors S3 defines are thrown as S3Error; the storage's own failures stay FsErrors,
 * mapped by the gateway's one table.
 */
import { FsError, isFsError } from '../../../core/errors.js'
import { parentOf } from '../../../core/paths.js'
import type { OpenFlags } from '../../../core/view.js'
import type { MultipartPartRecord, MultipartUploadRecord, StateStore } from '../../../core/state.js'
import { serially } from '../commits.js'
import { S3Error } from '../errors.js'
import { compareKeys, keyPath } from '../keys.js'
import { type ObjectMeta, fromRecordedMeta, multipartEtag, unquoteEtag } from '../meta/index.js'
import { statObject } from '../objects.js'
import { type S3Request, makeFolders, statBucket, unmakeFolders } from '../request.js'
import type { StagedArea } from '../../../core/staged.js'
import type { StagingHold, StagingQuota } from '../../../core/staging-quota.js'
import { PartStaging, PartTooLarge, UPLOAD_ID, UploadGone, newUploadId } from './staging.js'
import type { RequestedPart } from './xml.js'

const MiB = 1024 * 1024
/** S3's limits. */
export const MAX_PART_NUMBER = 10_000
export const MIN_PART_BYTES = 5 * MiB
export const MAX_PART_BYTES = 5 * 1024 * MiB
const READ_STEP = MiB
/** A part file no record names, not written to for this long, is debris (a crash cut it off). */
export const PART_IDLE_MS = 3_600_000

export interface MultipartOptions {
  readonly state: StateStore
  /** The staging area `<staging_dir>/s3-multipart` (core/staged.ts), shared by the nodes of a cluster. */
  readonly staging: StagedArea
  /** Where the object's ETag and metadata are recorded at Complete (gateways/s3/meta/). */
  readonly meta: Pick<ObjectMeta, 'put'>
  /** Uploads not completed this long after their creation are removed (`s3.multipart_expiry_hours`). */
  readonly expiryMs: number
  readonly log?: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void
  /** The bounds on staged bytes (per gateway user, in total, the disk's reserve); none: unbounded. */
  readonly quota?: StagingQuota
}

export interface PartInfo {
  readonly number: number
  readonly etag: string
  readonly size: number
  readonly modified: number
}

const FILE_READ: OpenFlags = { read: true, write: false, append: false, create: false, truncate: false, exclusive: false }

export const noSuchUpload = (id: string) =>
  new S3Error('NoSuchUpload', 'The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.', 404, { UploadId: id })

const accessDenied = () => new S3Error('AccessDenied', 'Access Denied', 403)

/** The path of the object a multipart upload makes; a folder key (ending in `/`) cannot be one. */
function objectPath(bucket: string, key: string): string {
  const { path, folder } = keyPath(bucket, key)
  if (folder) throw new S3Error('InvalidArgument', 'A key ending in "/" names a folder on this server: it cannot be uploaded in parts.', 400, { ArgumentName: 'key' })
  return path
}

export class MultipartUploads {
  readonly #o: MultipartOptions
  readonly #staging: PartStaging
  /** Uploads being completed in this process: a second Complete waits for none, it is refused. */
  readonly #completing = new Set<string>()
  /** The staged bytes of each upload, counted against its user's and the server's limits. */
  readonly #holds = new Map<string, StagingHold>()
  #timer: NodeJS.Timeout | null = null

  constructor(opts: MultipartOptions) {
    this.#o = opts
    this.#staging = new PartStaging(opts.staging)
  }

  /** Sweeps now, then every quarter of the expiry time (at most hourly), until `stop`. */
  async start(): Promise<void> {
    const every = Math.max(1000, Math.min(this.#o.expiryMs / 4, 3_600_000))
    this.#timer = setInterval(() => {
      this.sweep().catch((err: unknown) => this.#o.log?.('warn', 's3 multipart sweep failed', { error: String(err) }))
    }, every)
    this.#timer.unref()
    await this.sweep()
    await this.#adopt()
  }

  /** Counts the parts staged before a restart against their users' limits. */
  async #adopt(): Promise<void> {
    if (!this.#o.quota) return
    for (const up of await this.#o.state.expiredMultipartUploads(Number.MAX_SAFE_INTEGER)) {
      if (up.completed_etag !== null || this.#holds.has(up.id)) continue
      const parts = await this.#o.state.listMultipartParts(up.id)
      this.#hold(up.id, up.user)?.setTo(parts.reduce((n, p) => n + p.size, 0))
    }
  }

  /** The hold of upload `id`'s staged bytes (made on first use); none without a quota. */
  #hold(id: string, user: string): StagingHold | undefined {
    if (!this.#o.quota) return undefined
    let h = this.#holds.get(id)
    if (!h) this.#holds.set(id, (h = this.#o.quota.hold(this.#staging.dir, { login: `gateway:${user}`, share: null })))
    return h
  }

  #dropHold(id: string): void {
    this.#holds.get(id)?.release()
    this.#holds.delete(id)
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
  }

  /** CreateMultipartUpload: the bucket must exist; the key must be one this storage can hold. */
  async create(r: S3Request, contentType: string | null, recordedMeta: Readonly<Record<string, string>>): Promise<string> {
    if (!r.caller.fs.permissions.can_upload) throw accessDenied()
    objectPath(r.bucket, r.key)
    await statBucket(r)
    const id = newUploadId()
    const rec: MultipartUploadRecord = { id, user: r.caller.user, bucket: r.bucket, key: r.key, created: Date.now(), content_type: contentType, user_meta: recordedMeta, completed_etag: null }
    await this.#o.state.putMultipartUpload(rec)
    try {
      await this.#staging.create(id)
    } catch (err) {
      await this.#o.state.deleteMultipartUpload(id)
      throw err
    }
    return id
  }

  /**
   * Stores a part from the request body, which authentication verifies as it streams
   * (signature, Content-MD5, checksums): a body that fails at its end keeps nothing.
   */
  async uploadPart(r: S3Request, id: string, partNumber: string | null): Promise<string> {
    const number = this.#partNumber(partNumber)
    const up = await this.#upload(r, id, { write: true })
    if (r.caller.contentLength !== null && r.caller.contentLength > MAX_PART_BYTES) throw tooLarge()
    return this.#store(up, number, r.caller.body, r.caller.contentLength ?? 0)
  }

  /**
   * UploadPartCopy: a part made of (a range of) an object the caller may read, read
   * through the caller's own view.
   */
  async copyPart(r: S3Request, id: string, partNumber: string | null, source: { readonly bucket: string; readonly key: string; readonly range: string | undefined }): Promise<{ etag: string; modified: number }> {
    const number = this.#partNumber(partNumber)
    const up = await this.#upload(r, id, { write: true })
    const src = await statObject({ ...r, bucket: source.bucket }, source.key)
    if (src.folder) throw new S3Error('InvalidRequest', 'A folder marker cannot be copied on this server.', 400)
    const { start, end } = copyRange(source.range, src.entry.size)
    if (end - start + 1 > MAX_PART_BYTES) throw tooLarge()
    const h = await r.caller.fs.open(r.ctx, src.path, FILE_READ)
    async function* bytes(): AsyncIterable<Uint8Array> {
      try {
        for (let off = start; off <= end; ) {
          const chunk = await h.read(off, Math.min(READ_STEP, end - off + 1))
          if (chunk.byteLength === 0) throw new FsError('EIO', 'the object became shorter while it was copied')
          off += chunk.byteLength
          yield chunk
        }
      } finally {
        await h.close().catch(() => {})
      }
    }
    const etag = await this.#store(up, number, bytes(), end - start + 1)
    return { etag, modified: Date.now() }
  }

  /**
   * Complete, in two steps: this one checks the upload and its part list (its refusals
   * are the request's answer) and returns the second, which writes the object from the
   * staged parts, atomically, and resolves to its ETag (unquoted). The second may take as
   * long as writing the object takes: the answer is on its way meanwhile (route.ts).
   */
  async prepareComplete(r: S3Request, id: string, requested: readonly RequestedPart[]): Promise<() => Promise<string>> {
    const up = await this.#upload(r, id, { write: true, completed: true })
    if (up.completed_etag !== null) {
      const etag = up.completed_etag
      return async () => etag // a repeated Complete
    }
    if (this.#completing.has(id)) throw new S3Error('OperationAborted', 'A conflicting operation is in progress on this upload. Please try again.', 409)
    this.#completing.add(id)
    try {
      const path = objectPath(r.bucket, r.key)
      const chosen = this.#chosen(id, requested, await this.#o.state.listMultipartParts(id))
      return () => this.#complete(r, up, path, chosen).finally(() => this.#completing.delete(id))
    } catch (err) {
      this.#completing.delete(id)
      throw err
    }
  }

  async #complete(r: S3Request, up: MultipartUploadRecord, path: string, chosen: readonly MultipartPartRecord[]): Promise<string> {
    const id = up.id
    const etag = multipartEtag(chosen.map((p) => p.etag))
    const { userMeta, headers } = fromRecordedMeta(up.user_meta)
    // The storage keeps Content-Type and x-amz-meta-*; the standard headers are recorded (meta.put).
    const metadata = { userMeta, ...(up.content_type === null ? {} : { contentType: up.content_type }) }
    const made = await makeFolders(r, parentOf(path))
    try {
      const source = { area: this.#staging.dir, id, parts: chosen.map((p) => p.file) }
      const size = chosen.reduce((n, p) => n + p.size, 0)
      // Written, published and recorded as one commit of the object (gateways/s3/commits.ts):
      // one task on the thread that writes the storage reads the parts there, in order.
      await serially(r.caller.fs, path, async () => {
        const written = await r.caller.fs.commitStaged(r.ctx, path, source, { overwrite: true, size, metadata })
        if (written === null) throw new UploadGone()
        // Stat'ed, not the entry the write answered (gateways/s3/objects.ts says why).
        const entry = await r.caller.fs.stat(r.ctx, path)
        await this.#o.meta.put(r.caller.fs, path, entry, { etag, ...metadata, ...(Object.keys(headers).length === 0 ? {} : { headers }) }, r.ctx)
      })
    } catch (err) {
      await unmakeFolders(r, made)
      if (err instanceof UploadGone) throw noSuchUpload(id) // aborted or swept meanwhile
      throw err
    }
    await this.#o.state.completeMultipartUpload(id, etag)
    await this.#staging.remove(id)
    this.#dropHold(id)
    return etag
  }

  async abort(r: S3Request, id: string): Promise<void> {
    await this.#upload(r, id, { write: true })
    await this.#remove(id)
  }

  /** Parts after `marker`, at most `max`. */
  async listParts(r: S3Request, id: string, marker: number, max: number): Promise<{ upload: MultipartUploadRecord; parts: PartInfo[]; truncated: boolean }> {
    const upload = await this.#upload(r, id, { write: false })
    const after = (await this.#o.state.listMultipartParts(id)).filter((p) => p.number > marker)
    const parts = after.slice(0, max).map(({ number, etag, size, modified }) => ({ number, etag, size, modified }))
    return { upload, parts, truncated: after.length > max }
  }

  /** The caller's uploads in progress in `bucket`, ordered by key (UTF-8 bytes), then creation. */
  async listUploads(r: S3Request): Promise<MultipartUploadRecord[]> {
    await statBucket(r)
    const all = await this.#o.state.listMultipartUploads(r.caller.user, r.bucket)
    return all.sort((a, b) => compareKeys(a.key, b.key) || a.created - b.created || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  }

  /**
   * Removes expired uploads (completed or not) with their staging, staging folders no
   * upload owns (a process killed between the two), and part files no record names that
   * nobody wrote to for PART_IDLE_MS (a part cut off by a crash). It goes by the records
   * in the store, never by which process made what: the nodes of a cluster sweep one
   * shared folder, and a part another node is writing has a folder with a record and
   * keeps growing.
   */
  async sweep(): Promise<number> {
    let removed = 0
    for (const up of await this.#o.state.expiredMultipartUploads(Date.now() - this.#o.expiryMs)) {
      await this.#remove(up.id)
      if (up.completed_etag === null) removed++
    }
    for (const name of await this.#staging.entries()) {
      const up = UPLOAD_ID.test(name) ? await this.#o.state.getMultipartUpload(name) : null
      if (!up || up.completed_etag !== null) {
        await this.#staging.removeEntry(name)
        if (UPLOAD_ID.test(name)) this.#dropHold(name)
        continue
      }
      const known = new Set((await this.#o.state.listMultipartParts(name)).map((p) => p.file))
      for (const { file, mtimeMs } of await this.#staging.files(name)) {
        if (!known.has(file) && Date.now() - mtimeMs >= PART_IDLE_MS) await this.#staging.removePart(name, file)
      }
    }
    // Uploads another node (sharing the staging folder) completed or aborted: no longer counted here.
    for (const id of [...this.#holds.keys()]) {
      const up = await this.#o.state.getMultipartUpload(id)
      if ((!up || up.completed_etag !== null) && !this.#completing.has(id)) this.#dropHold(id)
    }
    if (removed > 0) this.#o.log?.('info', 's3 multipart uploads expired', { count: removed })
    return removed
  }

  // Internals ----------------------------------------------------------------

  /** The staged parts a Complete names, checked: ascending numbers, each uploaded with that ETag, the size rule. */
  #chosen(id: string, requested: readonly RequestedPart[], stagedParts: readonly MultipartPartRecord[]): MultipartPartRecord[] {
    const staged = new Map(stagedParts.map((p) => [p.number, p]))
    const chosen: MultipartPartRecord[] = []
    let prev = 0
    for (const r of requested) {
      if (r.number <= prev) throw new S3Error('InvalidPartOrder', 'The list of parts was not in ascending order. The parts list must be specified in order by part number.', 400, { UploadId: id })
      prev = r.number
      const p = staged.get(r.number)
      if (!p || unquoteEtag(r.etag) !== p.etag) {
        throw new S3Error('InvalidPart', "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.", 400, {
          UploadId: id,
          PartNumber: String(r.number),
        })
      }
      chosen.push(p)
    }
    chosen.forEach((p, i) => {
      if (i < chosen.length - 1 && p.size < MIN_PART_BYTES) {
        throw new S3Error('EntityTooSmall', 'Your proposed upload is smaller than the minimum allowed object size.', 400, {
          ProposedSize: String(p.size),
          MinSizeAllowed: String(MIN_PART_BYTES),
          PartNumber: String(p.number),
        })
      }
    })
    return chosen
  }

  /**
   * Streams a part to staging and records it, replacing one of the same number. Its
   * declared length (`expected`) is charged to the upload's hold before any byte is read:
   * over a limit, the answer comes before the body. @returns its MD5
   */
  async #store(up: MultipartUploadRecord, number: number, body: AsyncIterable<Uint8Array>, expected: number): Promise<string> {
    const id = up.id
    const hold = this.#hold(id, up.user)
    let part: { file: string; size: number; md5: string }
    try {
      if (hold && expected > 0) await hold.grow(expected)
      part = await this.#staging.write(id, number, body, MAX_PART_BYTES, hold, hold ? expected : 0)
    } catch (err) {
      if (err instanceof UploadGone || (isFsError(err) && err.code === 'ECANCELED' && !this.#holds.has(id))) {
        this.#dropHold(id)
        throw noSuchUpload(id)
      }
      if (err instanceof PartTooLarge) throw tooLarge()
      throw quotaError(err)
    }
    const prev = await this.#o.state.putMultipartPart({ upload_id: id, number, size: part.size, etag: part.md5, file: part.file, modified: Date.now() })
    if (prev === 'no-upload') {
      await this.#staging.removePart(id, part.file) // aborted while it streamed in
      this.#dropHold(id)
      throw noSuchUpload(id)
    }
    if (prev !== null && !this.#completing.has(id)) {
      const freed = await this.#staging.removePart(id, prev)
      hold?.shrink(freed)
    }
    return part.md5
  }

  async #remove(id: string): Promise<void> {
    await this.#o.state.deleteMultipartUpload(id)
    await this.#staging.remove(id)
    this.#dropHold(id)
  }

  /**
   * The upload, when `id` names one of this user's for this bucket and key (anything
   * else is NoSuchUpload: another user's upload is not told apart from none). A completed
   * upload only for `completed` (a repeated Complete).
   */
  async #upload(r: S3Request, id: string, opts: { write: boolean; completed?: boolean }): Promise<MultipartUploadRecord> {
    if (opts.write && !r.caller.fs.permissions.can_upload) throw accessDenied()
    const up = UPLOAD_ID.test(id) ? await this.#o.state.getMultipartUpload(id) : null
    if (!up || up.user !== r.caller.user || up.bucket !== r.bucket || up.key !== r.key) throw noSuchUpload(id)
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
}

/**
 * A refusal of the staging bounds (core/staging-quota.ts) in S3's words: the user's own
 * limit is EntityTooLarge (400: a retry cannot help, the upload must be finished or
 * aborted first); the server's total or its disk's reserve is InsufficientStorage (507),
 * as a full disk is answered. Anything else is returned as it was.
 */
function quotaError(err: unknown): unknown {
  if (!isFsError(err)) return err
  if (err.code === 'EFBIG') return new S3Error('EntityTooLarge', `Your proposed upload exceeds the maximum allowed size: ${err.message}`, 400)
  if (err.code === 'ENOSPC') return new S3Error('InsufficientStorage', err.message, 507)
  return err
}

const tooLarge = () => new S3Error('EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size', 400, { MaxSizeAllowed: String(MAX_PART_BYTES) })

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
