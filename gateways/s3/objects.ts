/**
 * @module gateways/s3/objects
 * GetObject, HeadObject, PutObject and DeleteObject on the caller's view.
 */
import mime from 'mime-types'
import { FsError } from '../../core/errors.js'
import type { HttpReply } from '../../core/http.js'
import { parentOf } from '../../core/paths.js'
import type { FileHandle, FsEntry } from '../../core/view.js'
import { parseRange, resolveRange } from '../../core/range.js'
import { evaluate, etagMatches, preconditionFailed } from './conditions.js'
import { S3Error, noSuchKey } from './errors.js'
import { keyPath } from './keys.js'
import { EMPTY_MD5, type ObjectMetaValue, standardHeadersFrom, userMetaFrom, userMetaHeaders } from './meta/index.js'
import { type S3Request, codeOf, makeFolders, removeEmptyParents, statBucket, unmakeFolders } from './request.js'
import { serially } from './commits.js'

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
 * Streams the body into a write handle opened with `digest: 'md5'` (the worker hashes
 * what it commits: the ETag), then publishes it and records its ETag with the file as
 * stored, as one commit of the object (gateways/s3/commits.ts). It commits only
 * once the body completed, which is when authentication has checked it (signatures,
 * Content-MD5, checksums) and its length matched: any failure aborts the handle, so the
 * previous object stays as it was.
 */
async function writeBody(r: S3Request, handle: FileHandle, path: string, metadata: Omit<ObjectMetaValue, 'etag'>): Promise<string> {
  let offset = 0
  try {
    for await (const chunk of r.caller.body) {
      const n = chunk.length
      await handle.write(offset, chunk, { give: true }) // the body's chunks are ours (core/http)
      offset += n
    }
    const expected = r.caller.contentLength
    if (expected !== null && offset !== expected) {
      throw new S3Error('IncompleteBody', 'You did not provide the number of bytes specified by the Content-Length HTTP header.', 400)
    }
    return await serially(r.caller.fs, path, async () => {
      const { digest } = await handle.close()
      if (digest === undefined) throw new FsError('EIO', 'the storage returned no digest of the object')
      // Stat'ed, not the entry the write answered: records are keyed by the stored time, which
      // some storages' writes only approximate (an S3 storage's PutObject answers no time,
      // SMB's differed by milliseconds).
      const entry = await r.caller.fs.stat(r.ctx, path)
      await r.meta.put(r.caller.fs, path, entry, { etag: digest, ...metadata }, r.ctx)
      return digest
    })
  } catch (err) {
    handle.abort()
    throw err
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

  const flags = { read: false, write: true, append: false, create: true, truncate: true, exclusive }
  // Kept on the object itself where the storage can (S3); recorded otherwise (meta.put).
  const metadata = { userMeta, ...(contentType === undefined ? {} : { contentType }) }
  let made: string[] = []
  let handle: FileHandle
  try {
    handle = await r.caller.fs.open(r.ctx, path, flags, { metadata, digest: 'md5' })
  } catch (err) {
    if (codeOf(err) !== 'ENOENT') throw exclusive && codeOf(err) === 'EEXIST' ? preconditionFailed('If-None-Match') : err
    made = await makeFolders(r, parentOf(path))
    try {
      handle = await r.caller.fs.open(r.ctx, path, flags, { metadata, digest: 'md5' })
    } catch (again) {
      await unmakeFolders(r, made)
      throw again
    }
  }
  let etag: string
  try {
    etag = await writeBody(r, handle, path, { ...metadata, ...(Object.keys(standard).length === 0 ? {} : { headers: standard }) })
  } catch (err) {
    await unmakeFolders(r, made)
    throw exclusive && codeOf(err) === 'EEXIST' ? preconditionFailed('If-None-Match') : err
  }
  return { status: 200, headers: { etag: `"${etag}"` } }
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
