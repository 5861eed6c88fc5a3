/**
 * @module gateways/s3/objects
 * GetObject, HeadObject, PutObject and DeleteObject on the caller's view.
 */
import mime from 'mime-types'
import { FsError } from '../../core/errors.js'
import { joinReady } from '../../core/join-ready.js'
import type { HttpReply } from '../../core/http.js'
import { parentOf } from '../../core/paths.js'
import { refusal } from '../../core/permissions.js'
import type { FileHandle, FsEntry, WrittenFile } from '../../core/view.js'
import { parseRange, resolveRange } from '../../core/range.js'
import { evaluate, etagMatches, preconditionFailed } from './conditions.js'
import { S3Error, noSuchKey } from './errors.js'
import { bucketPath, keyPath } from './keys.js'
import { EMPTY_MD5, type ObjectMetaValue, standardHeadersFrom, userMetaFrom, userMetaHeaders } from './meta/index.js'
import { type S3Request, codeOf, makeFolders, removeEmptyParents, statBucket } from './request.js'
import { inCommitOrder } from './commits.js'

/** Bytes read from the storage per step of a download. */
const READ_CHUNK = 1024 * 1024

/** Content-Type of an object with none recorded: from its name, as the HTTP API serves it. */
export const defaultType = (path: string): string => mime.lookup(path) || 'binary/octet-stream'

/** The object a key names: a file, or (key ending in `/`) a folder as its marker. NoSuchKey/NoSuchBucket otherwise. */
export async function statObject(r: S3Request, key = r.key): Promise<{ path: string; entry: FsEntry; folder: boolean }> {
  const { path, folder } = keyPath(r.bucket, key)
  let entry: FsEntry | null = null
  try {
    entry = await r.caller.fs.stat(r.ctx, path)
  } catch (err) {
    if (!['ENOENT', 'ENOTDIR'].includes(codeOf(err) ?? '')) throw err
  }
  if (entry === null || (entry.kind === 'dir') !== folder) {
    if (entry === null) await statBucket(r)
    throw noSuchKey(key)
  }
  return { path, entry, folder }
}

/** An object's ETag and metadata (listings take a page's at once: meta.getMany). */
export async function metaOf(r: S3Request, path: string, entry: FsEntry, folder: boolean): Promise<ObjectMetaValue> {
  if (folder) return { etag: EMPTY_MD5, contentType: 'application/x-directory', userMeta: {} }
  return r.meta.get(r.caller.fs, path, entry, r.ctx)
}

const httpDate = (ms: number | null): string => new Date(ms ?? 0).toUTCString()

/** The headers that describe an object (GetObject, HeadObject). */
function objectHeaders(path: string, entry: FsEntry, m: ObjectMetaValue): Record<string, string> {
  return {
    etag: `"${m.etag}"`,
    'last-modified': httpDate(entry.mtimeMs),
    'content-type': m.contentType ?? defaultType(path),
    'accept-ranges': 'bytes',
    ...m.headers,
    ...userMetaHeaders(m),
    // Stored content must never run as a page of this origin (as the HTTP API serves files).
    'x-content-type-options': 'nosniff',
    'content-security-policy': "sandbox; default-src 'none'",
  }
}

/** `response-*` query parameters: headers a (presigned) request asks the reply to carry. */
const OVERRIDES = ['content-type', 'content-language', 'expires', 'cache-control', 'content-disposition', 'content-encoding']

export async function getObject(r: S3Request, head: boolean): Promise<HttpReply> {
  const { path, entry, folder } = await statObject(r)
  const m = await metaOf(r, path, entry, folder)
  const headers = objectHeaders(path, entry, m)
  if (evaluate(r.req, { etag: m.etag, mtimeMs: entry.mtimeMs }) === 'not-modified') {
    return { status: 304, headers: { etag: headers.etag!, 'last-modified': headers['last-modified']! } }
  }
  for (const o of OVERRIDES) {
    const v = r.req.query.get(`response-${o}`)
    if (v !== null) headers[o] = v
  }
  const size = entry.size
  let start = 0
  let end = size - 1
  let status = 200
  const spec = parseRange(r.req.header('range'))
  if (spec !== null && spec !== 'invalid') {
    const range = resolveRange(spec, size)
    if (range === null) {
      throw new S3Error('InvalidRange', 'The requested range is not satisfiable', 416, { ActualObjectSize: String(size), RangeRequested: r.req.header('range') ?? '' })
    }
    ;({ start, end } = range)
    status = 206
    headers['content-range'] = `bytes ${start}-${end}/${size}`
  }
  const length = end + 1 - start
  if (head || length === 0) return { status, headers, length, ...(head ? {} : { body: new Uint8Array(0) }) }
  const handle = await r.caller.fs.open(r.ctx, path, { read: true, write: false, append: false, create: false, truncate: false, exclusive: false })
  return {
    status,
    headers,
    length,
    body: readRange(handle, start, end),
    finally: () => handle.abort(),
  }
}

async function* readRange(handle: FileHandle, start: number, end: number): AsyncGenerator<Uint8Array> {
  for (let off = start; off <= end; ) {
    const chunk = await handle.read(off, Math.min(READ_CHUNK, end + 1 - off))
    if (chunk.length === 0) throw new FsError('EIO', 'the object became shorter while it was read')
    off += chunk.length
    yield chunk
  }
}

/**
 * The payload, counted: at its end, a length other than the request announced is
 * IncompleteBody. Its own failure (that, or one of the checks `S3Caller.body` makes: a
 * signature, Content-MD5, a checksum) is kept in `error`: the write it feeds fails then
 * too, in the storage's words, and the request answers the payload's.
 */
function counted(body: AsyncIterable<Uint8Array>, expected: number | null): { readonly body: AsyncIterable<Uint8Array>; readonly error: unknown } {
  let error: unknown
  async function* count(): AsyncIterable<Uint8Array> {
    let n = 0
    try {
      for await (const chunk of body) {
        n += chunk.byteLength
        yield chunk
      }
      if (expected !== null && n !== expected) {
        throw new S3Error('IncompleteBody', 'You did not provide the number of bytes specified by the Content-Length HTTP header.', 400)
      }
    } catch (err) {
      error = err
      throw err
    }
  }
  return {
    body: count(),
    get error() {
      return error
    },
  }
}

/** Reads a body that must be empty (a folder marker); anything in it is refused. */
async function emptyBody(r: S3Request): Promise<void> {
  for await (const chunk of r.caller.body) {
    if (chunk.length > 0) throw new S3Error('InvalidArgument', 'A key ending in "/" names a folder on this server: it can only be written empty.', 400, { ArgumentName: 'key' })
  }
}

export async function putObject(r: S3Request): Promise<HttpReply> {
  const { path, folder } = keyPath(r.bucket, r.key)
  const userMeta = userMetaFrom(r.req)
  const standard = standardHeadersFrom(r.req)
  const contentType = r.req.header('content-type')
  const ifNoneMatch = r.req.header('if-none-match')
  if (ifNoneMatch !== undefined && ifNoneMatch.trim() !== '*') throw new S3Error('NotImplemented', 'If-None-Match on PutObject takes only "*".', 501)
  const exclusive = ifNoneMatch !== undefined
  const ifMatch = r.req.header('if-match')
  if (ifMatch !== undefined) {
    const cur = await statObject(r).catch((err: unknown) => {
      throw err instanceof S3Error && err.code === 'NoSuchKey' ? noSuchKey(r.key) : err
    })
    if (!etagMatches(ifMatch, (await metaOf(r, cur.path, cur.entry, cur.folder)).etag)) throw preconditionFailed('If-Match')
  }

  if (folder) {
    await emptyBody(r)
    const made = await makeFolders(r, path)
    if (made.length === 0) {
      const e = await r.caller.fs.stat(r.ctx, path)
      if (e.kind !== 'dir') throw new FsError('ENOTDIR', 'not a folder')
      if (exclusive) throw preconditionFailed('If-None-Match')
    }
    return { status: 200, headers: { etag: `"${EMPTY_MD5}"` } }
  }

  // Kept on the object itself where the storage can (S3); recorded otherwise (meta.put).
  const metadata = { userMeta, ...(contentType === undefined ? {} : { contentType }) }
  // One upload task: the worker that writes the bytes hashes them (the MD5 is the ETag),
  // checks the signed SHA-256 before it commits, makes the missing folders below the
  // bucket (and removes them again if the write fails), and answers the file as
  // committed, which the ETag's record is keyed by. Nothing is committed unless the body
  // completed, which is when authentication has checked it and its length matched.
  const payload = r.caller.payload()
  const body = counted(payload.body, r.caller.contentLength)
  const ordered = inCommitOrder(r.caller.fs, path, body.body)
  try {
    const size = r.caller.contentLength
    let written: WrittenFile
    try {
      written = await r.caller.fs.writeFile(r.ctx, path, joinReady(ordered.body), {
        overwrite: !exclusive,
        metadata,
        digest: 'md5',
        foldersBelow: bucketPath(r.bucket),
        ...(size === null ? {} : { size }),
        ...(payload.sha256 === null ? {} : { sha256: payload.sha256 }),
      })
    } catch (err) {
      if (body.error !== undefined) throw body.error
      throw await putFailure(r, err, path, exclusive, payload.sha256)
    }
    if (written.digest === undefined) throw new FsError('EIO', 'the storage returned no digest of the object')
    await r.meta.put(r.caller.fs, path, written, { etag: written.digest, ...metadata, ...(Object.keys(standard).length === 0 ? {} : { headers: standard }) }, r.ctx)
    return { status: 200, headers: { etag: `"${written.digest}"` } }
  } finally {
    ordered.done()
  }
}

/** A PutObject's failed write in S3's words. */
async function putFailure(r: S3Request, err: unknown, path: string, exclusive: boolean, sha256: string | null): Promise<unknown> {
  const code = codeOf(err)
  if (code === 'EINTEGRITY' && sha256 !== null) {
    return new S3Error('XAmzContentSHA256Mismatch', "The provided 'x-amz-content-sha256' header does not match what was computed.", 400, { ClientComputedContentSHA256: sha256 })
  }
  if (code === 'EEXIST' && exclusive) return preconditionFailed('If-None-Match')
  if (code === 'ENOENT') {
    await statBucket(r) // NoSuchBucket
    // A folder on the way is missing, and this key may not make it.
    if (!r.caller.fs.permissions.can_create_directory) return refusal('can_create_directory', parentOf(path))
  }
  return err
}

/**
 * Deletes one object; never a folder's content. A missing key is a success (204), as
 * on S3; a key ending in `/` removes its folder only when empty (a folder with content
 * shows no marker anyway). Deleting a file removes the folders it leaves empty, up to
 * the bucket: the prefix vanishes with its last key, as on S3.
 */
export async function deleteKey(r: S3Request, key: string): Promise<void> {
  const { path, folder } = keyPath(r.bucket, key)
  try {
    if (folder) await r.caller.fs.rmdir(r.ctx, path)
    else await r.caller.fs.unlink(r.ctx, path)
  } catch (err) {
    const code = codeOf(err)
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      await statBucket(r)
      return
    }
    if (code === 'ENOTEMPTY' || code === 'EISDIR') return // a folder with content: no object of that key
    throw err
  }
  if (folder) return // a marker is a folder made on purpose: its own parents stay, as other markers on S3
  await r.meta.forget(r.caller.fs, path)
  await removeEmptyParents(r, path)
}

export async function deleteObject(r: S3Request): Promise<HttpReply> {
  await deleteKey(r, r.key)
  return { status: 204 }
}
