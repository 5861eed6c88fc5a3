/**
 * @module gateways/s3/copy
 * CopyObject: `x-amz-copy-source` (`[/]bucket/key[?versionId=...]`, URL-encoded) onto
 * the request's key, inside the caller's view (View.copy: server-side where the
 * storage can). The metadata directive COPY keeps the source's ETag, Content-Type,
 * standard headers (Cache-Control, ...) and `x-amz-meta-*`; REPLACE takes those of the
 * request.
 */
import type { HttpReply } from '../../core/http.js'
import { parentOf } from '../../core/paths.js'
import { evaluate } from './conditions.js'
import { S3Error } from './errors.js'
import { decodePathPart, keyPath } from './keys.js'
import { metaOf, statObject } from './objects.js'
import { standardHeadersFrom, userMetaFrom } from './meta/index.js'
import { type S3Request, makeFolders, unmakeFolders } from './request.js'
import { isoTime } from './xml.js'
import { xmlReply } from './xml.js'

/** `x-amz-copy-source` → bucket and key. */
export function parseCopySource(raw: string): { bucket: string; key: string } {
  const noVersion = raw.replace(/\?versionId=[^&]*$/, '')
  const s = decodePathPart(noVersion.startsWith('/') ? noVersion.slice(1) : noVersion)
  const i = s.indexOf('/')
  if (i <= 0 || i === s.length - 1) throw new S3Error('InvalidArgument', 'Copy Source must mention the source bucket and key: sourcebucket/sourcekey', 400, { ArgumentName: 'x-amz-copy-source' })
  return { bucket: s.slice(0, i), key: s.slice(i + 1) }
}

export async function copyObject(r: S3Request, source: string): Promise<HttpReply> {
  const src = parseCopySource(source)
  const directive = (r.req.header('x-amz-metadata-directive') ?? 'COPY').toUpperCase()
  if (directive !== 'COPY' && directive !== 'REPLACE') {
    throw new S3Error('InvalidArgument', 'Unknown metadata directive.', 400, { ArgumentName: 'x-amz-metadata-directive', ArgumentValue: directive })
  }
  const from = await statObject({ ...r, bucket: src.bucket }, src.key)
  if (from.folder) throw new S3Error('InvalidRequest', 'A folder marker cannot be copied on this server.', 400)
  const srcMeta = await metaOf(r, from.path, from.entry, false)
  evaluate(r.req, { etag: srcMeta.etag, mtimeMs: from.entry.mtimeMs }, 'x-amz-copy-source-')
  const to = keyPath(r.bucket, r.key)
  if (to.folder) throw new S3Error('InvalidArgument', 'A key ending in "/" names a folder on this server: nothing can be copied onto it.', 400, { ArgumentName: 'key' })
  const replace = directive === 'REPLACE'
  if (to.path === from.path && !replace) {
    throw new S3Error(
      'InvalidRequest',
      "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.",
      400,
    )
  }
  const contentType = r.req.header('content-type')
  const headers = standardHeadersFrom(r.req)
  const meta = replace
    ? { etag: srcMeta.etag, userMeta: userMetaFrom(r.req), ...(Object.keys(headers).length === 0 ? {} : { headers }), ...(contentType === undefined ? {} : { contentType }) }
    : srcMeta
  let entry = from.entry
  if (to.path !== from.path) {
    const made = await makeFolders(r, parentOf(to.path))
    try {
      entry = await r.caller.fs.copy(r.ctx, from.path, to.path, { overwrite: true })
    } catch (err) {
      await unmakeFolders(r, made)
      throw err
    }
  }
  await r.meta.put(r.caller.fs, to.path, entry, meta, r.ctx)
  return xmlReply('CopyObjectResult', { LastModified: isoTime(entry.mtimeMs), ETag: `"${meta.etag}"` })
}
