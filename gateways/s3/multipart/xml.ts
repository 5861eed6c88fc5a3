/**
 * @module gateways/s3/multipart/xml
 * The part list of CompleteMultipartUpload, read with the gateway's XML parser.
 */
import { malformed, parseXml } from '../xml.js'

export interface RequestedPart {
  readonly number: number
  /** As sent: quoted or not. */
  readonly etag: string
}

/** The part list of a CompleteMultipartUpload body, in the order given. @throws S3Error MalformedXML */
export function parseCompleteBody(xml: string): RequestedPart[] {
  const root = parseXml(xml).CompleteMultipartUpload
  if (root === null || typeof root !== 'object') throw malformed()
  const parts = (root as { Part?: unknown }).Part
  if (!Array.isArray(parts) || parts.length === 0) throw malformed()
  return parts.map((p: unknown) => {
    const { PartNumber, ETag } = (p ?? {}) as { PartNumber?: unknown; ETag?: unknown }
    const n = typeof PartNumber === 'string' ? PartNumber.trim() : ''
    if (!/^\d{1,9}$/.test(n) || typeof ETag !== 'string') throw malformed()
    return { number: Number(n), etag: ETag.trim() }
  })
}
