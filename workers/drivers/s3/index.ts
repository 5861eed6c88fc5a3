/**
 * @module workers/drivers/s3
 * Amazon S3 and S3-compatible servers, through `@aws-sdk/client-s3` (imported
 * lazily by the factory, so a worker that never opens S3 never loads the SDK).
 *
 * Sections, in the order every driver keeps: 1) config, 2) classify (errors.ts),
 * 3) sessions (session.ts), 4) the driver, 5) factory.
 *
 * Layout. The spec's root is `bucket[/prefix]`, or '' to serve every bucket of
 * the account: then `/` lists the buckets as directories, `/b/...` lies inside
 * bucket `b`, mkdir `/b` creates a bucket and remove `/b` deletes an empty one.
 *
 * Directories are key prefixes ending in `/`. mkdir writes an empty marker object
 * `dir/`, so an empty directory made here exists and is listed (emptyDirs). A
 * directory that other tools made implicitly (keys `a/b` without an `a/` marker)
 * exists while something lies under it; deleting or moving away its last object
 * writes its marker, so that it stays, as a folder on a file system would.
 *
 * Emulated: rename (server-side CopyObject, multipart UploadPartCopy over 5 GiB,
 * then batched DeleteObjects; a directory is moved object by object, not
 * atomically); the parent-must-exist and overwrite=false rules (a HEAD before
 * the write; on AWS the write is also sent with `If-None-Match: *`, which closes
 * the race; servers without conditional writes leave a small window). Not kept:
 * modification times (S3's LastModified is the upload time; mtimes cannot be set).
 *
 * Object metadata: a write may carry a Content-Type and user metadata (`x-amz-meta-*`,
 * from the S3 gateway), kept on the object; `metadata` reads them back with the ETag,
 * which stat and listings also report. Copies keep them (MetadataDirective COPY).
 *
 * Writes are atomic by nature: an object appears only once complete. A body under
 * one part is sent with PutObject; a longer or unknown one as a multipart upload of
 * 8 MiB parts (larger for huge known sizes), at most PARTS_IN_FLIGHT at a time, so
 * memory stays bounded. Any failure or abort sends AbortMultipartUpload; an abort
 * that cannot reach the server is retried after the next successful request
 * (workers/drivers/upload-cleanup.ts).
 */
import type { Agent as HttpAgent } from 'node:http'
import type { Agent as HttpsAgent } from 'node:https'
import type { Readable } from 'node:stream'
import mime from 'mime-types'
import type * as S3 from '@aws-sdk/client-s3'
import type { S3Spec } from '../../../core/backend.js'
import type { ByteRange, Driver, Entry, Features, ObjectMetadata, OpContext, StoredMetadata, WriteOptions } from '../../../core/driver.js'
import { FsError, isFsError } from '../../../core/errors.js'
import { baseName, joinPath, parentOf } from '../../../core/paths.js'
import { type SdkError, classify } from './errors.js'
import { type AnyCommand, type OutputOf, type S3ClientOptions, type Sdk, openClient } from './session.js'
import { ByteQueue, rechunk } from '../../rechunk.js'
import { InFlight, inParallel } from '../../inflight.js'
import { UploadCleanup } from '../upload-cleanup.js'

export { classify } from './errors.js'

// 1) Config ------------------------------------------------------------------

export interface S3Config extends S3ClientOptions, Pick<S3Spec, 'root' | 'listChunk'> {
  /** Multipart part size in bytes (at least 5 MiB, S3's minimum). */
  readonly partSize?: number
}

const MiB = 1024 * 1024
/** Default part size: big enough for throughput, small enough for bounded memory. */
const PART_SIZE = 8 * MiB
/** Parts uploaded at once per write: memory per upload ≤ (PARTS_IN_FLIGHT + 1) × part size. */
const PARTS_IN_FLIGHT = 3
/** S3's limits. */
const MAX_PARTS = 10_000
const MIN_PART = 5 * MiB
const MAX_COPY = 5 * 1024 * MiB
const COPY_PART = 512 * MiB
/** Bytes per chunk handed to the consumer (the same as the local driver's). */
const READ_CHUNK = MiB
/** Keys per DeleteObjects request (S3's maximum). */
const DELETE_BATCH = 1000
/** Objects copied at once when a directory moves. */
const COPY_CONCURRENCY = 8

// 2) classify: errors.ts. 3) Sessions: session.ts (the client; no SessionPool, see there).

// 4) The driver --------------------------------------------------------------

const FEATURES: Features = { emptyDirs: true, atomicRename: false, rangeRead: true, mtimePrecisionMs: null, refusedNameChars: '' }

/** Where a canonical path lies: the account's bucket list, or a bucket and a key ('' = the bucket's top). */
type Loc = { readonly kind: 'service' } | { readonly kind: 'key'; readonly bucket: string; readonly key: string; readonly top: boolean }
type KeyLoc = Extract<Loc, { kind: 'key' }>

/** An unfinished multipart upload to abort. */
interface Upload {
  readonly Bucket: string
  readonly Key: string
  readonly UploadId: string
}

const dirEntry = (path: string, mtimeMs: number | null = null): Entry => ({ path, name: baseName(path), kind: 'dir', size: 0, mtimeMs })
const fileEntry = (path: string, size: number, mtime: Date | undefined, etag?: string): Entry => ({
  path,
  name: baseName(path),
  kind: 'file',
  size,
  mtimeMs: mtime ? mtime.getTime() : null,
  ...(etag ? { etag: unquote(etag) } : {}),
})
const unquote = (etag: string): string => etag.replace(/^"|"$/g, '')
/** The prefix under which a location's children lie. */
const prefixOf = (loc: KeyLoc): string => (loc.key === '' ? '' : `${loc.key}/`)
/** CopySource: bucket/key, URL-encoded segment by segment. */
const copySource = (bucket: string, key: string): string => `${encodeURIComponent(bucket)}/${key.split('/').map(encodeURIComponent).join('/')}`
const canceled = (path: string) => new FsError('ECANCELED', 'cancelled', { path })
/** Stored with the object, for clients that read the bucket directly (browsers, CDNs). */
const contentType = (path: string): string => mime.lookup(baseName(path)) || 'application/octet-stream'
/** A write's Content-Type (the one given, else by the name) and user metadata. */
const objectHeaders = (path: string, meta: ObjectMetadata | undefined): { ContentType: string; Metadata?: Record<string, string> } => ({
  ContentType: meta?.contentType ?? contentType(path),
  ...(meta && Object.keys(meta.userMeta).length > 0 ? { Metadata: { ...meta.userMeta } } : {}),
})

class S3Driver implements Driver {
  readonly kind = 's3'
  readonly features = FEATURES
  readonly #sdk: Sdk
  readonly #client: S3.S3Client
  readonly #agents: readonly [HttpAgent, HttpsAgent]
  /** Fixed bucket, or null when the root is the account. */
  readonly #bucket: string | null
  /** Key prefix of the root inside the fixed bucket: '' or 'a/b/'. */
  readonly #base: string
  readonly #partSize: number
  /** `max-keys` of a listing request (undefined: the server's default, 1000 on S3). */
  readonly #listChunk: number | undefined
  /** Unfinished multipart uploads whose abort could not reach the server. */
  readonly #aborts: UploadCleanup<Upload>

  constructor(sdk: Sdk, cfg: S3Config) {
    this.#sdk = sdk
    const { client, agents } = openClient(sdk, cfg)
    this.#client = client
    this.#agents = agents
    const segs = cfg.root.split('/').filter((s) => s !== '')
    this.#bucket = segs[0] ?? null
    this.#base = segs.length > 1 ? `${segs.slice(1).join('/')}/` : ''
    this.#partSize = Math.max(MIN_PART, cfg.partSize ?? PART_SIZE)
    this.#listChunk = cfg.listChunk
    this.#aborts = new UploadCleanup<Upload>({
      run: async (u) => {
        try {
          await this.#client.send(new this.#sdk.AbortMultipartUploadCommand(u))
        } catch (err) {
          const e = classify(err, '/')
          if (e.code !== 'ENOENT') throw e // NoSuchUpload: gone already
        }
      },
    })
  }

  async stat(ctx: OpContext, path: string): Promise<Entry> {
    const loc = this.#loc(path)
    if (loc.kind === 'service') {
      // Also what a login checks: ListBuckets proves the credentials.
      await this.#send(ctx, path, new this.#sdk.ListBucketsCommand({}))
      return dirEntry(path)
    }
    if (loc.top) {
      await this.#send(ctx, path, new this.#sdk.ListObjectsV2Command({ Bucket: loc.bucket, Prefix: prefixOf(loc), MaxKeys: 1 }))
      return dirEntry(path)
    }
    const head = await this.#head(ctx, path, loc)
    if (head) return fileEntry(path, head.ContentLength ?? 0, head.LastModified, head.ETag)
    if (await this.#dirExists(ctx, path, loc)) return dirEntry(path)
    throw new FsError('ENOENT', `${path}: no such file or directory`, { path })
  }

  async *list(ctx: OpContext, dir: string): AsyncIterable<readonly Entry[]> {
    const loc = this.#loc(dir)
    if (loc.kind === 'service') {
      const out = await this.#send(ctx, dir, new this.#sdk.ListBucketsCommand({}))
      yield (out.Buckets ?? []).filter((b) => b.Name).map((b) => dirEntry(joinPath(dir, b.Name!), b.CreationDate?.getTime() ?? null))
      return
    }
    const prefix = prefixOf(loc)
    let token: string | undefined
    let first = true
    do {
      const out = await this.#send(ctx, dir, new this.#sdk.ListObjectsV2Command({ Bucket: loc.bucket, Prefix: prefix, Delimiter: '/', ContinuationToken: token, MaxKeys: this.#listChunk }))
      const page: Entry[] = []
      const files = new Set<string>()
      for (const o of out.Contents ?? []) {
        const name = o.Key?.slice(prefix.length) ?? ''
        if (name === '') continue // the directory's own marker
        files.add(name)
        page.push(fileEntry(joinPath(dir, name), o.Size ?? 0, o.LastModified, o.ETag))
      }
      for (const p of out.CommonPrefixes ?? []) {
        const name = p.Prefix?.slice(prefix.length, -1) ?? ''
        // '' comes from keys with '//'; a name that is also a file is shadowed by it, as in stat.
        if (name !== '' && !files.has(name)) page.push(dirEntry(joinPath(dir, name)))
      }
      if (first && !loc.top && (out.KeyCount ?? 0) === 0 && (out.Contents?.length ?? 0) === 0) {
        // Nothing under the prefix, not even a marker: a file, or nothing at all.
        if (await this.#head(ctx, dir, loc)) throw new FsError('ENOTDIR', `${dir}: not a directory`, { path: dir })
        throw new FsError('ENOENT', `${dir}: no such file or directory`, { path: dir })
      }
      first = false
      if (page.length > 0) yield page
      token = out.IsTruncated ? out.NextContinuationToken : undefined
    } while (token !== undefined)
  }

  async *read(ctx: OpContext, path: string, range?: ByteRange): AsyncIterable<Uint8Array> {
    const loc = this.#fileLoc(path, 'EISDIR')
    const start = range?.start ?? 0
    const header = start === 0 && range?.end === undefined ? undefined : `bytes=${start}-${range?.end ?? ''}`
    let out: S3.GetObjectCommandOutput
    try {
      out = await this.#client.send(new this.#sdk.GetObjectCommand({ Bucket: loc.bucket, Key: loc.key, Range: header }), { abortSignal: ctx.signal })
    } catch (err) {
      const e = classify(err, path)
      if ((err as SdkError).name === 'InvalidRange') return // at or past the end: nothing to give
      if (e.code === 'ENOENT' && (await this.#dirExists(ctx, path, loc))) throw new FsError('EISDIR', `${path}: is a directory`, { path })
      throw ctx.signal.aborted ? canceled(path) : e
    }
    this.#afterSuccess()
    const body = out.Body as Readable | undefined
    if (body === undefined) return
    // Some servers ignore a range, or part of it (s3rver sends everything for bytes=0-0):
    // skip what precedes the range and stop at its end, whatever came.
    const served = /^bytes (\d+)-/.exec(out.ContentRange ?? '')
    let skip = header === undefined ? 0 : start - (served ? Number(served[1]) : 0)
    let left = range?.end === undefined ? Infinity : range.end - start + 1
    if (skip < 0) {
      body.destroy()
      throw new FsError('EIO', `${path}: the S3 server answered another range than asked`, { path })
    }
    const expected = out.ContentLength
    let received = 0
    async function* inRange(): AsyncGenerator<Buffer> {
      for await (const chunk of body as AsyncIterable<Buffer>) {
        if (ctx.signal.aborted) throw canceled(path)
        received += chunk.length
        const off = Math.min(skip, chunk.length)
        skip -= off
        const stop = Math.min(chunk.length, off + left)
        left -= stop - off
        if (stop > off) yield chunk.subarray(off, stop)
        if (left === 0) return
      }
      if (ctx.signal.aborted) throw canceled(path)
      // A body that ends early without an error must not pass for a whole file.
      if (left !== 0 && expected !== undefined && received !== expected) {
        throw new FsError('EUNAVAILABLE', `${path}: the S3 server closed the transfer early`, { path })
      }
    }
    try {
      // The SDK's chunks are views into the socket's buffers: they are copied into
      // owned 1 MiB buffers, which the consumer may transfer to another thread.
      yield* rechunk(inRange(), READ_CHUNK, { owned: true })
    } catch (err) {
      throw ctx.signal.aborted ? canceled(path) : classify(err, path)
    } finally {
      body.destroy()
    }
  }

  async write(ctx: OpContext, path: string, body: AsyncIterable<Uint8Array>, opts: WriteOptions = {}): Promise<Entry> {
    const top = this.#loc(path)
    if (top.kind === 'key' && top.top) throw new FsError('EACCES', `${path}: only buckets (folders) can be at the top`, { path })
    const loc = this.#fileLoc(path, 'EISDIR')
    const create = opts.overwrite === false
    // Independent checks, sent together: one round trip of latency instead of three.
    const [, isDir, existing] = await Promise.all([
      this.#checkParent(ctx, path),
      this.#dirExists(ctx, path, loc),
      create ? this.#head(ctx, path, loc) : null,
    ])
    if (isDir) throw new FsError('EISDIR', `${path}: is a directory`, { path })
    if (existing) throw new FsError('EEXIST', `${path}: already exists`, { path })
    const partSize = this.#partSizeFor(opts.size)
    const cutter = new ByteQueue()
    const it = body[Symbol.asyncIterator]()
    // Gather the first part: a body that ends before filling it is one PutObject.
    let done = false
    try {
      while (!done && cutter.size < partSize) {
        const r = await it.next()
        if (ctx.signal.aborted) throw canceled(path)
        if (r.done) done = true
        else cutter.push(r.value)
      }
    } catch (err) {
      await it.return?.().catch(() => {})
      throw ctx.signal.aborted ? canceled(path) : classify(err, path)
    }
    if (done && cutter.size < partSize) {
      const data = cutter.take(cutter.size)
      await this.#conditional(create, (cond) =>
        this.#send(ctx, path, new this.#sdk.PutObjectCommand({ Bucket: loc.bucket, Key: loc.key, Body: data, ContentLength: data.length, ...objectHeaders(path, opts.metadata), ...cond })),
      )
      return this.#written(ctx, path, loc, data.length)
    }
    const size = await this.#multipart(ctx, path, loc, cutter, partSize, done ? null : it, create, opts.metadata)
    return this.#written(ctx, path, loc, size)
  }

  /**
   * The object as just written: its time and ETag as a `stat` gives them (PutObject and
   * CompleteMultipartUpload answer no time), which a record keyed by them needs (the S3
   * gateway's ETags). Gone already (deleted meanwhile): what was written, timed now.
   */
  async #written(ctx: OpContext, path: string, loc: KeyLoc, size: number): Promise<Entry> {
    const head = await this.#head(ctx, path, loc)
    return head ? fileEntry(path, head.ContentLength ?? size, head.LastModified, head.ETag) : fileEntry(path, size, new Date())
  }

  async mkdir(ctx: OpContext, dir: string): Promise<void> {
    const loc = this.#loc(dir)
    if (loc.kind === 'service') return
    if (loc.top) {
      if (this.#bucket !== null) return
      try {
        await this.#send(ctx, dir, new this.#sdk.CreateBucketCommand({ Bucket: loc.bucket }))
      } catch (err) {
        if ((err as SdkError).name !== 'BucketAlreadyOwnedByYou') throw err
      }
      return
    }
    const [file, isDir, parent] = await Promise.all([
      this.#head(ctx, dir, loc),
      this.#dirExists(ctx, dir, loc),
      this.#checkParent(ctx, dir).then(() => null, (err: unknown) => err),
    ])
    if (file) throw new FsError('EEXIST', `${dir}: already exists`, { path: dir })
    if (isDir) return
    if (parent !== null) throw parent
    await this.#send(ctx, dir, new this.#sdk.PutObjectCommand({ Bucket: loc.bucket, Key: prefixOf(loc), Body: Buffer.alloc(0), ContentLength: 0 }))
  }

  async remove(ctx: OpContext, path: string): Promise<void> {
    const loc = this.#loc(path)
    if (loc.kind === 'service' || (loc.top && this.#bucket !== null)) throw new FsError('EACCES', 'the root cannot be removed', { path })
    if (loc.top) {
      await this.#send(ctx, path, new this.#sdk.DeleteBucketCommand({ Bucket: loc.bucket }))
      return
    }
    if (await this.#head(ctx, path, loc)) {
      await this.#send(ctx, path, new this.#sdk.DeleteObjectCommand({ Bucket: loc.bucket, Key: loc.key }))
      await this.#keepParent(ctx, path)
      return
    }
    // Sorted keys: the marker `dir/` comes first; anything after it is content.
    const prefix = prefixOf(loc)
    const out = await this.#send(ctx, path, new this.#sdk.ListObjectsV2Command({ Bucket: loc.bucket, Prefix: prefix, MaxKeys: 2 }))
    const keys = (out.Contents ?? []).map((o) => o.Key)
    if (keys.length === 0) throw new FsError('ENOENT', `${path}: no such file or directory`, { path })
    if (keys.length > 1 || keys[0] !== prefix) throw new FsError('ENOTEMPTY', `${path}: directory not empty`, { path })
    await this.#send(ctx, path, new this.#sdk.DeleteObjectCommand({ Bucket: loc.bucket, Key: prefix }))
  }

  /**
   * Server-side copy, then delete. A file: CopyObject (UploadPartCopy over 5 GiB).
   * A directory: every object under its prefix, COPY_CONCURRENCY at a time, then
   * DeleteObjects in batches. Not atomic: a failure midway leaves both trees partly.
   */
  async rename(ctx: OpContext, from: string, to: string, opts: { overwrite: boolean }): Promise<void> {
    const src = this.#fileLoc(from, 'ENOTSUP')
    const dst = this.#fileLoc(to, 'EEXIST')
    const head = await this.#head(ctx, from, src)
    const target = await this.stat(ctx, to).catch((err: unknown) => {
      if (isFsError(err) && err.code === 'ENOENT') return null
      throw err
    })
    if (head) {
      if (target && (!opts.overwrite || target.kind === 'dir')) throw new FsError('EEXIST', `${to}: already exists`, { path: to })
      await this.#copyObject(ctx, to, src.bucket, src.key, dst.bucket, dst.key, head.ContentLength ?? 0)
      await this.#send(ctx, from, new this.#sdk.DeleteObjectCommand({ Bucket: src.bucket, Key: src.key }))
      await this.#keepParent(ctx, from)
      return
    }
    if (!(await this.#dirExists(ctx, from, src))) throw new FsError('ENOENT', `${from}: no such file or directory`, { path: from })
    if (target) throw new FsError('EEXIST', `${to}: already exists`, { path: to })
    const srcPrefix = prefixOf(src)
    const dstPrefix = prefixOf(dst)
    for await (const objects of this.#walk(ctx, from, src.bucket, srcPrefix)) {
      await inParallel(COPY_CONCURRENCY, objects, (o) =>
        this.#copyObject(ctx, to, src.bucket, o.key, dst.bucket, dstPrefix + o.key.slice(srcPrefix.length), o.size),
      )
      await this.#deleteKeys(ctx, from, src.bucket, objects.map((o) => o.key))
    }
    await this.#keepParent(ctx, from)
  }

  /** One object, server-side: CopyObject (UploadPartCopy over 5 GiB); the target appears whole or not at all. */
  async copy(ctx: OpContext, from: string, to: string, opts: { overwrite: boolean }): Promise<Entry> {
    const src = this.#fileLoc(from, 'EISDIR')
    const dst = this.#fileLoc(to, 'EISDIR')
    const head = await this.#head(ctx, from, src)
    if (!head) {
      if (await this.#dirExists(ctx, from, src)) throw new FsError('EISDIR', `${from}: is a directory`, { path: from })
      throw new FsError('ENOENT', `${from}: no such file or directory`, { path: from })
    }
    const target = await this.stat(ctx, to).catch((err: unknown) => {
      if (isFsError(err) && err.code === 'ENOENT') return null
      throw err
    })
    if (target?.kind === 'dir') throw new FsError('EISDIR', `${to}: is a directory`, { path: to })
    if (target && !opts.overwrite) throw new FsError('EEXIST', `${to}: already exists`, { path: to })
    await this.#copyObject(ctx, to, src.bucket, src.key, dst.bucket, dst.key, head.ContentLength ?? 0)
    return this.stat(ctx, to)
  }

  /** HeadObject's ETag, Content-Type and user metadata. */
  async metadata(ctx: OpContext, path: string): Promise<StoredMetadata> {
    const loc = this.#fileLoc(path, 'EISDIR')
    const head = await this.#head(ctx, path, loc)
    if (!head) {
      if (await this.#dirExists(ctx, path, loc)) throw new FsError('EISDIR', `${path}: is a directory`, { path })
      throw new FsError('ENOENT', `${path}: no such file or directory`, { path })
    }
    return { etag: unquote(head.ETag ?? ''), userMeta: { ...head.Metadata }, ...(head.ContentType === undefined ? {} : { contentType: head.ContentType }) }
  }

  /**
   * Removes a file, or a directory and every object under it, with DeleteObjects
   * batches of 1000 keys: the bulk delete workers/ops.ts can use instead of a walk
   * of one request per entry.
   */
  async removeTree(ctx: OpContext, path: string): Promise<void> {
    const loc = this.#loc(path)
    if (loc.kind === 'service' || loc.top) return this.remove(ctx, path).then(() => undefined, (err: unknown) => {
      // A bucket must be emptied first; the walk below does that for a bucket's top.
      if (loc.kind === 'key' && isFsError(err) && err.code === 'ENOTEMPTY') return this.#emptyAndRemoveBucket(ctx, path, loc)
      throw err
    })
    if (await this.#head(ctx, path, loc)) return this.remove(ctx, path)
    let any = false
    for await (const objects of this.#walk(ctx, path, loc.bucket, prefixOf(loc))) {
      any = true
      await this.#deleteKeys(ctx, path, loc.bucket, objects.map((o) => o.key))
    }
    if (!any) throw new FsError('ENOENT', `${path}: no such file or directory`, { path })
    await this.#keepParent(ctx, path)
  }

  async close(): Promise<void> {
    this.#client.destroy()
    for (const a of this.#agents) a.destroy()
  }

  // Internals ----------------------------------------------------------------

  #loc(path: string): Loc {
    const rel = path === '/' ? '' : path.slice(1)
    if (this.#bucket !== null) {
      return { kind: 'key', bucket: this.#bucket, key: rel === '' ? this.#base.slice(0, -1) : this.#base + rel, top: rel === '' }
    }
    if (rel === '') return { kind: 'service' }
    const i = rel.indexOf('/')
    return i < 0 ? { kind: 'key', bucket: rel, key: '', top: true } : { kind: 'key', bucket: rel.slice(0, i), key: rel.slice(i + 1), top: false }
  }

  /** The location of a file: never the account or a bucket's top (those are directories). */
  #fileLoc(path: string, code: 'EISDIR' | 'ENOTSUP' | 'EEXIST'): KeyLoc {
    const loc = this.#loc(path)
    if (loc.kind === 'service' || loc.top) {
      const msg = code === 'ENOTSUP' ? 'a bucket or the root cannot be renamed' : code === 'EISDIR' ? 'is a directory' : 'already exists'
      throw new FsError(code, `${path}: ${msg}`, { path })
    }
    return loc
  }

  /** Sends one command; errors classified, a success lets deferred aborts run. */
  async #send<C extends AnyCommand>(ctx: OpContext, path: string, cmd: C): Promise<OutputOf<C>> {
    let out: OutputOf<C>
    try {
      out = (await this.#client.send(cmd as never, { abortSignal: ctx.signal })) as OutputOf<C>
    } catch (err) {
      throw ctx.signal.aborted ? canceled(path) : classify(err, path)
    }
    this.#afterSuccess()
    return out
  }

  /** HeadObject, or null when there is no such object. */
  async #head(ctx: OpContext, path: string, loc: KeyLoc): Promise<S3.HeadObjectCommandOutput | null> {
    try {
      return await this.#send(ctx, path, new this.#sdk.HeadObjectCommand({ Bucket: loc.bucket, Key: loc.key }))
    } catch (err) {
      if (isFsError(err) && err.code === 'ENOENT') return null
      throw err
    }
  }

  /** True when the prefix holds anything: its marker, or objects under it. */
  async #dirExists(ctx: OpContext, path: string, loc: KeyLoc): Promise<boolean> {
    if (loc.top) return true
    const out = await this.#send(ctx, path, new this.#sdk.ListObjectsV2Command({ Bucket: loc.bucket, Prefix: prefixOf(loc), MaxKeys: 1 }))
    return (out.KeyCount ?? out.Contents?.length ?? 0) > 0
  }

  /**
   * After `path` was deleted: a folder that existed only through its keys would
   * vanish with its last object. A file system keeps the folder, and so do we, by
   * writing its marker.
   */
  async #keepParent(ctx: OpContext, path: string): Promise<void> {
    const parent = parentOf(path)
    const ploc = this.#loc(parent)
    if (ploc.kind === 'service' || ploc.top) return
    if (await this.#dirExists(ctx, parent, ploc)) return
    await this.#send(ctx, parent, new this.#sdk.PutObjectCommand({ Bucket: ploc.bucket, Key: prefixOf(ploc), Body: Buffer.alloc(0), ContentLength: 0 }))
  }

  /** The parent of `path` must be an existing directory (the Driver contract). */
  async #checkParent(ctx: OpContext, path: string): Promise<void> {
    const parent = parentOf(path)
    const ploc = this.#loc(parent)
    if (ploc.kind === 'service') {
      if (this.#loc(path).kind === 'key' && !(this.#loc(path) as KeyLoc).top) return
      throw new FsError('EACCES', `${path}: only buckets can be created at the top`, { path })
    }
    if (ploc.top) return
    if (await this.#dirExists(ctx, parent, ploc)) return
    if (await this.#head(ctx, parent, ploc)) throw new FsError('ENOTDIR', `${parent}: not a directory`, { path: parent })
    throw new FsError('ENOENT', `${parent}: no such directory`, { path: parent })
  }

  #partSizeFor(size: number | undefined): number {
    if (size === undefined || size <= this.#partSize * (MAX_PARTS - 1)) return this.#partSize
    return Math.ceil(size / (MAX_PARTS - 1) / MiB) * MiB
  }

  /**
   * With `create`, the request carries `If-None-Match: *` (S3 refuses to replace an
   * object then). A server that does not implement conditional writes answers
   * NotImplemented: the HEAD check already done is all there is then.
   */
  async #conditional<T>(create: boolean, fn: (cond: { IfNoneMatch?: string }) => Promise<T>): Promise<T> {
    if (!create) return fn({})
    try {
      return await fn({ IfNoneMatch: '*' })
    } catch (err) {
      if (isFsError(err) && err.code === 'ENOTSUP') return fn({})
      throw err
    }
  }

  /** Uploads the bytes in `cutter` and the rest of `it` in parts; aborts the upload on any failure. */
  async #multipart(
    ctx: OpContext,
    path: string,
    loc: KeyLoc,
    cutter: ByteQueue,
    partSize: number,
    it: AsyncIterator<Uint8Array> | null,
    create: boolean,
    meta: ObjectMetadata | undefined,
  ): Promise<number> {
    const { UploadId } = await this.#send(ctx, path, new this.#sdk.CreateMultipartUploadCommand({ Bucket: loc.bucket, Key: loc.key, ...objectHeaders(path, meta) }))
    if (UploadId === undefined) throw new FsError('EIO', `${path}: the S3 server gave no upload id`, { path })
    // Parts in flight share one controller: the first failure stops the others.
    const ac = new AbortController()
    const onAbort = (): void => ac.abort()
    ctx.signal.addEventListener('abort', onAbort, { once: true })
    const partCtx: OpContext = { signal: ac.signal, requestId: ctx.requestId }
    const parts: S3.CompletedPart[] = []
    const flight = new InFlight()
    let total = 0
    try {
      let n = 0
      const send = async (): Promise<void> => {
        const PartNumber = ++n
        if (PartNumber > MAX_PARTS) throw new FsError('EFBIG', `${path}: over S3's ${MAX_PARTS} parts`, { path })
        await flight.below(PARTS_IN_FLIGHT)
        const data = cutter.take(partSize)
        total += data.length
        flight.add(
          this.#send(partCtx, path, new this.#sdk.UploadPartCommand({ Bucket: loc.bucket, Key: loc.key, UploadId, PartNumber, Body: data, ContentLength: data.length })).then(
            (out) => void parts.push({ PartNumber, ETag: out.ETag }),
            (err: unknown) => {
              ac.abort() // the first failure stops the other parts
              throw err
            },
          ),
        )
      }
      for (;;) {
        while (cutter.size >= partSize) await send()
        if (it === null) break
        const r = await it.next()
        if (ctx.signal.aborted) throw canceled(path)
        if (r.done) it = null
        else cutter.push(r.value)
      }
      if (cutter.size > 0) await send() // the last, shorter part
      await flight.all()
      if (ctx.signal.aborted) throw canceled(path)
      parts.sort((a, b) => a.PartNumber! - b.PartNumber!)
      await this.#conditional(create, (cond) =>
        this.#send(ctx, path, new this.#sdk.CompleteMultipartUploadCommand({ Bucket: loc.bucket, Key: loc.key, UploadId, MultipartUpload: { Parts: parts }, ...cond })),
      )
      return total
    } catch (err) {
      ac.abort()
      await flight.settled()
      await it?.return?.().catch(() => {})
      await this.#aborts.now({ Bucket: loc.bucket, Key: loc.key, UploadId })
      throw ctx.signal.aborted ? canceled(path) : classify(err, path)
    } finally {
      ctx.signal.removeEventListener('abort', onAbort)
    }
  }

  /** After a request succeeded the server is back: retry the aborts that could not reach it. */
  #afterSuccess(): void {
    this.#aborts.afterSuccess()
  }

  async #copyObject(ctx: OpContext, path: string, fromBucket: string, fromKey: string, toBucket: string, toKey: string, size: number): Promise<void> {
    const CopySource = copySource(fromBucket, fromKey)
    if (size <= MAX_COPY) {
      await this.#send(ctx, path, new this.#sdk.CopyObjectCommand({ Bucket: toBucket, Key: toKey, CopySource, MetadataDirective: 'COPY' }))
      return
    }
    const { UploadId } = await this.#send(ctx, path, new this.#sdk.CreateMultipartUploadCommand({ Bucket: toBucket, Key: toKey }))
    if (UploadId === undefined) throw new FsError('EIO', `${path}: the S3 server gave no upload id`, { path })
    try {
      const ranges = Array.from({ length: Math.ceil(size / COPY_PART) }, (_, i) => i)
      const parts: S3.CompletedPart[] = []
      await inParallel(PARTS_IN_FLIGHT, ranges, async (i) => {
        const start = i * COPY_PART
        const end = Math.min(size, start + COPY_PART) - 1
        const out = await this.#send(ctx, path, new this.#sdk.UploadPartCopyCommand({ Bucket: toBucket, Key: toKey, UploadId, PartNumber: i + 1, CopySource, CopySourceRange: `bytes=${start}-${end}` }))
        parts.push({ PartNumber: i + 1, ETag: out.CopyPartResult?.ETag })
      })
      parts.sort((a, b) => a.PartNumber! - b.PartNumber!)
      await this.#send(ctx, path, new this.#sdk.CompleteMultipartUploadCommand({ Bucket: toBucket, Key: toKey, UploadId, MultipartUpload: { Parts: parts } }))
    } catch (err) {
      await this.#aborts.now({ Bucket: toBucket, Key: toKey, UploadId })
      throw err
    }
  }

  /** Every object under a prefix (no delimiter), a listing page at a time. */
  async *#walk(ctx: OpContext, path: string, bucket: string, prefix: string): AsyncIterable<{ key: string; size: number }[]> {
    let token: string | undefined
    do {
      const out = await this.#send(ctx, path, new this.#sdk.ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token, MaxKeys: this.#listChunk }))
      const objects = (out.Contents ?? []).filter((o) => o.Key !== undefined).map((o) => ({ key: o.Key!, size: o.Size ?? 0 }))
      if (objects.length > 0) yield objects
      token = out.IsTruncated ? out.NextContinuationToken : undefined
    } while (token !== undefined)
  }

  async #deleteKeys(ctx: OpContext, path: string, bucket: string, keys: readonly string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += DELETE_BATCH) {
      const batch = keys.slice(i, i + DELETE_BATCH)
      const out = await this.#send(ctx, path, new this.#sdk.DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }))
      const failed = out.Errors?.[0]
      if (failed) throw classify({ name: failed.Code, message: failed.Message }, path)
    }
  }

  async #emptyAndRemoveBucket(ctx: OpContext, path: string, loc: KeyLoc): Promise<void> {
    for await (const objects of this.#walk(ctx, path, loc.bucket, '')) await this.#deleteKeys(ctx, path, loc.bucket, objects.map((o) => o.key))
    await this.#send(ctx, path, new this.#sdk.DeleteBucketCommand({ Bucket: loc.bucket }))
  }
}

// 5) Factory -----------------------------------------------------------------

export async function createS3Driver(cfg: S3Config): Promise<Driver> {
  // The SDK warns at load time on Node versions it plans to drop; this service chose Node 20.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true'
  const sdk = await import('@aws-sdk/client-s3')
  return new S3Driver(sdk, cfg)
}

