/**
 * @module gateways/s3/multipart/xml
 * The XML of multipart uploads, made and read with fast-xml-parser: the result
 * documents S3 answers with, and the part list of CompleteMultipartUpload.
 */
import { XMLBuilder, XMLParser } from 'fast-xml-parser'
import { S3Error } from '../errors.js'

const NS = 'http://s3.amazonaws.com/doc/2006-03-01/'

const builder = new XMLBuilder({ ignoreAttributes: false, attributeNamePrefix: '@_', suppressEmptyNode: false, processEntities: true })

/** A result document: `<?xml ...?><root xmlns="...">...</root>`. Arrays repeat their element. */
export function resultXml(root: string, body: Record<string, unknown>): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n${builder.build({ [root]: { '@_xmlns': NS, ...body } })}`
}

const parser = new XMLParser({
  ignoreAttributes: true,
  parseTagValue: false,
  trimValues: true,
  processEntities: true,
  isArray: (name, jpath) => jpath === 'CompleteMultipartUpload.Part',
})

export interface RequestedPart {
  readonly number: number
  /** As sent: quoted or not. */
  readonly etag: string
}

const malformed = () => new S3Error('MalformedXML', 'The XML you provided was not well-formed or did not validate against our published schema.', 400)

/** The part list of a CompleteMultipartUpload body, in the order given. @throws S3Error MalformedXML */
export function parseCompleteBody(xml: string): RequestedPart[] {
  let doc: unknown
  try {
    doc = parser.parse(xml, true)
  } catch {
    throw malformed()
  }
  const root = (doc as { CompleteMultipartUpload?: unknown }).CompleteMultipartUpload
  if (root === null || typeof root !== 'object') throw malformed()
  const parts = (root as { Part?: unknown }).Part
  if (!Array.isArray(parts) || parts.length === 0) throw malformed()
  return parts.map((p: unknown) => {
    const { PartNumber, ETag } = (p ?? {}) as { PartNumber?: unknown; ETag?: unknown }
    if (typeof PartNumber !== 'string' || !/^\d{1,9}$/.test(PartNumber) || typeof ETag !== 'string') throw malformed()
    return { number: Number(PartNumber), etag: ETag }
  })
}
