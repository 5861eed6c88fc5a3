/**
 * @module gateways/s3/deletes
 * DeleteObjects: up to 1000 keys in an XML body that carries a Content-MD5 or a
 * checksum (S3 requires one; authentication checks it), each deleted as DeleteObject
 * does; a key that fails is reported in the result, not as the request's error.
 */
import type { HttpReply } from '../../core/http.js'
import { S3Error, toS3Error } from './errors.js'
import { deleteKey } from './objects.js'
import type { S3Request } from './request.js'
import { type XmlNode, malformed, parseXml, xmlReply } from './xml.js'

const MAX_OBJECTS = 1000
/** 1000 keys of 1024 bytes, escaped, with room to spare. */
const MAX_BODY = 8 * 1024 * 1024

export async function deleteObjects(r: S3Request): Promise<HttpReply> {
  const hasChecksum = r.req.header('content-md5') !== undefined || [...r.req.headers()].some(([n]) => n.startsWith('x-amz-checksum-')) || r.req.header('x-amz-trailer') !== undefined
  if (!hasChecksum) throw new S3Error('InvalidRequest', 'Missing required header for this request: Content-MD5', 400)
  const chunks: Uint8Array[] = []
  let n = 0
  for await (const c of r.caller.body) {
    n += c.length
    if (n > MAX_BODY) throw malformed()
    chunks.push(c)
  }
  const body = Buffer.concat(chunks) // checked by authentication (Content-MD5, checksums) once read whole
  const doc = parseXml(body.toString('utf8')).Delete as Record<string, unknown> | undefined
  if (!doc || typeof doc !== 'object') throw malformed()
  const objects = (doc.Object ?? []) as unknown[]
  if (!Array.isArray(objects) || objects.length === 0) throw malformed()
  if (objects.length > MAX_OBJECTS) throw malformed()
  const keys = objects.map((o) => {
    const k = o && typeof o === 'object' ? (o as Record<string, unknown>).Key : undefined
    if (typeof k !== 'string') throw malformed()
    return k
  })
  const quiet = String(doc.Quiet ?? 'false').trim().toLowerCase() === 'true'
  const deleted: XmlNode[] = []
  const errors: XmlNode[] = []
  for (const key of keys) {
    try {
      await deleteKey(r, key)
      if (!quiet) deleted.push({ Key: key })
    } catch (err) {
      const { error } = toS3Error(err)
      if (error.code === 'NoSuchBucket') throw err
      errors.push({ Key: key, Code: error.code, Message: error.message })
    }
  }
  return xmlReply('DeleteResult', { Deleted: deleted, Error: errors })
}
