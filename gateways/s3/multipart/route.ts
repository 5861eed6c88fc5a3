/**
 * @module gateways/s3/multipart/route
 * The multipart query forms of S3's REST API, on the neutral HTTP types:
 *
 * | request | operation |
 * |---|---|
 * | `POST /<bucket>/<key>?uploads` | CreateMultipartUpload |
 * | `PUT /<bucket>/<key>?partNumber=N&uploadId=U` | UploadPart (UploadPartCopy with `x-amz-copy-source`) |
 * | `POST /<bucket>/<key>?uploadId=U` | CompleteMultipartUpload |
 * | `DELETE /<bucket>/<key>?uploadId=U` | AbortMultipartUpload |
 * | `GET /<bucket>/<key>?uploadId=U` | ListParts |
 * | `GET /<bucket>?uploads` | ListMultipartUploads |
 *
 * `route` answers undefined for any other request: the gateway's router goes on.
 */
import type { HttpReply } from '../../../core/http.js'
import type { MultipartUploadRecord } from '../../../core/state.js'
import { parseCopySource } from '../copy.js'
import { S3Error, toS3Error } from '../errors.js'
import { compareKeys } from '../keys.js'
import { urlEncodeKey } from '../list.js'
import { quoteEtag, standardHeadersFrom, toRecordedMeta, userMetaFrom } from '../meta/index.js'
import type { S3Request } from '../request.js'
import { type XmlNode, isoTime, xmlDocument, xmlReply } from '../xml.js'
import type { MultipartUploads } from './uploads.js'
import { parseCompleteBody } from './xml.js'

/** A CompleteMultipartUpload body (10,000 parts with quoted ETags are about 1.2 MB). */
const MAX_COMPLETE_BODY = 4 * 1024 * 1024
const MAX_LIST = 1000

/** Who, as S3's listings show it: the gateway user. */
const person = (user: string) => ({ ID: user, DisplayName: user })

/** While a Complete writes the object, a space goes out this often so that clients do not time out (S3 does the same). */
const KEEP_ALIVE_MS = 5000

/** `log`: where a Complete's failure that is a bug (not an S3 or storage error) is told, once its 200 went out. */
export interface RouteOptions {
  readonly keepAliveMs?: number
  readonly log?: (level: 'error', msg: string, fields: Record<string, unknown>) => void
}

export async function multipartRoute(uploads: MultipartUploads, r: S3Request, opts: RouteOptions = {}): Promise<HttpReply | undefined> {
  const { req, bucket, key } = r
  const q = req.query
  const uploadId = q.get('uploadId')
  if (key === '') return req.method === 'GET' && q.has('uploads') && uploadId === null ? listUploads(uploads, r) : undefined
  switch (req.method) {
    case 'POST':
      if (q.has('uploads') && uploadId === null) {
        // The standard headers travel in the upload's recorded metadata (meta/index.ts, toRecordedMeta).
        const id = await uploads.create(r, req.header('content-type') ?? null, toRecordedMeta(userMetaFrom(req), standardHeadersFrom(req)))
        return xmlReply('InitiateMultipartUploadResult', { Bucket: bucket, Key: key, UploadId: id })
      }
      if (uploadId !== null) {
        const finish = await uploads.prepareComplete(r, uploadId, parseCompleteBody(await bodyText(r)))
        const location = `/${bucket}/${key.split('/').map(encodeURIComponent).join('/')}`
        return completeReply(finish(), (etag) => ({ Location: location, Bucket: bucket, Key: key, ETag: quoteEtag(etag) }), r.req.requestId, opts)
      }
      return undefined
    case 'PUT': {
      if (uploadId === null || !q.has('partNumber')) return undefined
      const source = req.header('x-amz-copy-source')
      if (source !== undefined) {
        const made = await uploads.copyPart(r, uploadId, q.get('partNumber'), { ...parseCopySource(source), range: req.header('x-amz-copy-source-range') })
        return xmlReply('CopyPartResult', { LastModified: isoTime(made.modified), ETag: quoteEtag(made.etag) })
      }
      const etag = await uploads.uploadPart(r, uploadId, q.get('partNumber'))
      return { status: 200, headers: { etag: quoteEtag(etag) } }
    }
    case 'DELETE':
      if (uploadId === null) return undefined
      await uploads.abort(r, uploadId)
      return { status: 204 }
    case 'GET': {
      if (uploadId === null) return undefined
      const marker = count(q.get('part-number-marker'), 'part-number-marker', 0)
      const max = Math.min(MAX_LIST, count(q.get('max-parts'), 'max-parts', MAX_LIST))
      const { upload, parts, truncated } = await uploads.listParts(r, uploadId, marker, max)
      const encode = urlEncoding(q)
      return xmlReply('ListPartsResult', {
        Bucket: bucket,
        Key: encode(key),
        UploadId: uploadId,
        Initiator: person(upload.user),
        Owner: person(upload.user),
        StorageClass: 'STANDARD',
        PartNumberMarker: marker,
        NextPartNumberMarker: parts.length > 0 ? parts[parts.length - 1]!.number : marker,
        MaxParts: max,
        IsTruncated: truncated,
        ...(q.get('encoding-type') === 'url' ? { EncodingType: 'url' } : {}),
        Part: parts.map((p) => ({ PartNumber: p.number, LastModified: isoTime(p.modified), ETag: quoteEtag(p.etag), Size: p.size })),
      })
    }
    default:
      return undefined
  }
}

/**
 * The answer to a Complete whose object is being written: 200 at once, the XML
 * declaration, a space every `keepAliveMs` while the object is written (a big object on
 * a slow storage takes longer than clients wait for a first byte), then the result, or
 * S3's error document in the body, as S3 answers a Complete that fails once started (the
 * SDKs and the aws CLI read it as the error it is).
 */
function completeReply(work: Promise<string>, result: (etag: string) => XmlNode, requestId: string, opts: RouteOptions): HttpReply {
  const keepAliveMs = opts.keepAliveMs ?? KEEP_ALIVE_MS
  work.catch(() => {}) // read below; never an unhandled rejection if the client left first
  const decl = xmlDocument('CompleteMultipartUploadResult', {})
  const prolog = decl.slice(0, decl.indexOf('?>') + 2)
  const withoutProlog = (doc: string): string => doc.slice(doc.indexOf('?>') + 2)
  async function* body(): AsyncGenerator<string> {
    yield prolog
    for (;;) {
      let timer: NodeJS.Timeout | undefined
      const tick = new Promise<'tick'>((res) => (timer = setTimeout(res, keepAliveMs, 'tick')))
      const state = await Promise.race([work.then(() => 'done' as const, () => 'done' as const), tick])
      clearTimeout(timer)
      if (state === 'done') break
      yield ' '
    }
    try {
      yield withoutProlog(xmlDocument('CompleteMultipartUploadResult', result(await work)))
    } catch (err) {
      const { error, bug } = toS3Error(err)
      if (bug) opts.log?.('error', 's3 multipart complete failed', { request_id: requestId, error: err instanceof Error ? (err.stack ?? err.message) : String(err) })
      yield withoutProlog(xmlDocument('Error', { Code: error.code, Message: error.message, ...error.extra, RequestId: requestId }, null))
    }
  }
  return { status: 200, headers: { 'content-type': 'application/xml' }, body: toBytes(body()) }
}

async function* toBytes(strings: AsyncIterable<string>): AsyncIterable<Uint8Array> {
  for await (const s of strings) yield Buffer.from(s)
}

async function listUploads(uploads: MultipartUploads, r: S3Request): Promise<HttpReply> {
  const q = r.req.query
  const prefix = q.get('prefix') ?? ''
  const delimiter = q.get('delimiter') ?? ''
  const keyMarker = q.get('key-marker') ?? ''
  const idMarker = q.get('upload-id-marker') ?? ''
  const max = Math.min(MAX_LIST, count(q.get('max-uploads'), 'max-uploads', MAX_LIST))
  const encode = urlEncoding(q)
  const all = afterMarkers(await uploads.listUploads(r), keyMarker, idMarker, delimiter).filter((u) => u.key.startsWith(prefix))
  const shown: MultipartUploadRecord[] = []
  const prefixes: string[] = []
  let truncated = false
  let last: { key: string; id: string } | null = null
  for (const u of all) {
    const i = delimiter === '' ? -1 : u.key.indexOf(delimiter, prefix.length)
    const common = i < 0 ? null : u.key.slice(0, i + delimiter.length)
    if (common !== null && prefixes[prefixes.length - 1] === common) continue
    if (shown.length + prefixes.length === max) {
      truncated = true
      break
    }
    if (common !== null) {
      prefixes.push(common)
      last = { key: common, id: '' }
    } else {
      shown.push(u)
      last = { key: u.key, id: u.id }
    }
  }
  return xmlReply('ListMultipartUploadsResult', {
    Bucket: r.bucket,
    KeyMarker: encode(keyMarker),
    UploadIdMarker: idMarker,
    NextKeyMarker: truncated && last ? encode(last.key) : '',
    NextUploadIdMarker: truncated && last ? last.id : '',
    ...(prefix === '' ? {} : { Prefix: encode(prefix) }),
    ...(delimiter === '' ? {} : { Delimiter: encode(delimiter) }),
    MaxUploads: max,
    IsTruncated: truncated,
    ...(q.get('encoding-type') === 'url' ? { EncodingType: 'url' } : {}),
    Upload: shown.map((u) => ({ Key: encode(u.key), UploadId: u.id, Initiator: person(u.user), Owner: person(u.user), StorageClass: 'STANDARD', Initiated: isoTime(u.created) })),
    CommonPrefixes: prefixes.map((p) => ({ Prefix: encode(p) })),
  })
}

/**
 * The uploads after the markers: keys past `keyMarker` and, with `idMarker`, the uploads
 * of that very key listed after that one. A marker that is a common prefix (it ends with
 * the delimiter: a truncated listing's NextKeyMarker) skips every key under it.
 */
function afterMarkers(list: readonly MultipartUploadRecord[], keyMarker: string, idMarker: string, delimiter: string): MultipartUploadRecord[] {
  if (keyMarker === '') return [...list]
  const at = idMarker === '' ? -1 : list.findIndex((u) => u.key === keyMarker && u.id === idMarker)
  const underMarker = delimiter !== '' && keyMarker.endsWith(delimiter)
  return list.filter((u, i) => {
    const c = compareKeys(u.key, keyMarker)
    if (c === 0) return at >= 0 && i > at
    return c > 0 && !(underMarker && u.key.startsWith(keyMarker))
  })
}

/** `encoding-type=url`: keys percent-encoded as S3 does (the SDKs decode them). */
function urlEncoding(q: URLSearchParams): (s: string) => string {
  if (q.get('encoding-type') === null) return (s) => s
  if (q.get('encoding-type') !== 'url') throw new S3Error('InvalidArgument', 'Invalid Encoding Method specified in Request', 400, { ArgumentName: 'encoding-type' })
  return urlEncodeKey
}

function count(raw: string | null, name: string, dflt: number): number {
  if (raw === null || raw === '') return dflt
  if (!/^\d{1,9}$/.test(raw)) throw new S3Error('InvalidArgument', `Provided ${name} not an integer or within integer range`, 400, { ArgumentName: name, ArgumentValue: raw })
  return Number(raw)
}

/** The request body as text, at most MAX_COMPLETE_BODY bytes. */
async function bodyText(r: S3Request): Promise<string> {
  if (r.caller.contentLength !== null && r.caller.contentLength > MAX_COMPLETE_BODY) throw tooLong()
  const chunks: Uint8Array[] = []
  let n = 0
  for await (const c of r.caller.body) {
    n += c.byteLength
    if (n > MAX_COMPLETE_BODY) throw tooLong()
    chunks.push(c)
  }
  return Buffer.concat(chunks).toString('utf8')
}

const tooLong = () => new S3Error('MaxMessageLengthExceeded', 'Your request was too big.', 400)
