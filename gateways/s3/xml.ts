/**
 * @module gateways/s3/xml
 * S3's XML documents, built and parsed with fast-xml-parser: user data (keys, names,
 * messages) is escaped by the library, never concatenated into markup.
 */
import { XMLBuilder, XMLParser } from 'fast-xml-parser'
import type { HttpReply } from '../../core/http.js'
import { S3Error } from './errors.js'

export const S3_NS = 'http://s3.amazonaws.com/doc/2006-03-01/'

const builder = new XMLBuilder({ ignoreAttributes: false, attributeNamePrefix: '@_', suppressEmptyNode: false, suppressBooleanAttributes: false })

/** A value as XML text: absent elements are left out, arrays repeat their element. */
export type XmlValue = string | number | boolean | undefined | null | XmlNode | readonly XmlValue[]
export interface XmlNode {
  readonly [name: string]: XmlValue
}

/** `<?xml ...?><root xmlns="...">...</root>` */
export function xmlDocument(root: string, content: XmlNode, ns: string | null = S3_NS): string {
  const body = ns === null ? content : { '@_xmlns': ns, ...content }
  return builder.build({ '?xml': { '@_version': '1.0', '@_encoding': 'UTF-8' }, [root]: body }) as string
}

/** A 200 (or `status`) reply carrying an XML document. */
export function xmlReply(root: string, content: XmlNode, status = 200, headers: Record<string, string> = {}): HttpReply {
  return { status, headers: { 'content-type': 'application/xml', ...headers }, body: xmlDocument(root, content) }
}

const parser = new XMLParser({
  ignoreAttributes: true,
  parseTagValue: false,
  trimValues: false,
  processEntities: true,
  removeNSPrefix: true,
  isArray: (name) => name === 'Object' || name === 'Part',
})

/**
 * Parses a request body (DeleteObjects, CreateBucket...). No DTDs: a document with one
 * (entity expansion, external entities) is MalformedXML, as anything else not XML.
 */
export function parseXml(text: string): Record<string, unknown> {
  if (/<!DOCTYPE|<!ENTITY/i.test(text)) throw malformed()
  let doc: unknown
  try {
    doc = parser.parse(text, true)
  } catch {
    throw malformed()
  }
  if (doc === null || typeof doc !== 'object') throw malformed()
  return doc as Record<string, unknown>
}

export const malformed = (): S3Error =>
  new S3Error('MalformedXML', 'The XML you provided was not well-formed or did not validate against our published schema.', 400)

/** An S3 time: ISO 8601 with milliseconds, UTC. */
export const isoTime = (ms: number | null): string => new Date(ms ?? 0).toISOString()
