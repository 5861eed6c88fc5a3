/**
 * @module gateways/s3/deletes
 * DeleteObjects: up to 1000 keys in an XML body (delete-request.ts: bounded, read in
 * one pass) that carries a Content-MD5 or a
 * checksum (S3 requires one; authentication checks it), each deleted as DeleteObject
 * does; a key that fails is reported in the result, not as the request's error.
 */
import type { HttpReply } from '../../core/http.js'
import { S3Error, toS3Error } from './errors.js'
import { deleteKey } from './objects.js'
import type { S3Request } from './request.js'
import { bodyTooLarge, MAX_DELETE_BODY, parseDeleteRequest } from './delete-request.js'
import { type XmlNode, xmlReply } from './xml.js'

export async function deleteObjects(r: S3Request): Promise<HttpReply> {
  const hasChecksum = r.req.header('content-md5') !== undefined || [...r.req.headers()].some(([n]) => n.startsWith('x-amz-checksum-')) || r.req.header('x-amz-trailer') !== undefined
  if (!hasChecksum) throw new S3Error('InvalidRequest', 'Missing required header for this request: Content-MD5', 400)
  // Bounded before a byte is read when announced, and as it streams otherwise.
  const announced = r.caller.contentLength
  if (announced !== null && announced > MAX_DELETE_BODY) throw bodyTooLarge()
  const chunks: Uint8Array[] = []
  let n = 0
  for await (const c of r.caller.body) {
    n += c.length
    if (n > MAX_DELETE_BODY) throw bodyTooLarge()
    chunks.push(c)
  }
  const body = Buffer.concat(chunks) // checked by authentication (Content-MD5, checksums) once read whole
  const { keys, quiet } = parseDeleteRequest(body.toString('utf8'))
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
