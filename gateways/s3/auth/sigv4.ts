/**
 * @module gateways/s3/auth/sigv4
 * Signature Version 4 as S3 checks it, in the Authorization header or in a presigned
 * URL's query (https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-authenticating-requests.html):
 * the request's claims are parsed and checked (algorithm, credential scope, time), the
 * string to sign is built with `@smithy/signature-v4`'s canonical request (the raw path
 * as sent, never normalised nor encoded twice, as S3 wants), and a secret can then be
 * checked against the signature, in constant time, without anything here ever seeing
 * it outside `matches`.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import { ALGORITHM_IDENTIFIER, SignatureV4, getCanonicalHeaders } from '@smithy/signature-v4'
import type { HttpRequest } from '../../../core/http.js'
import { S3Error } from '../errors.js'

/** How far a request's time may be from the server's. */
export const MAX_SKEW_MS = 15 * 60_000
/** The longest validity of a presigned URL: seven days. */
export const MAX_PRESIGN_SECONDS = 7 * 24 * 3600
export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD'
export const EMPTY_SHA256 = createHash('sha256').digest('hex')

/** The request's signature claims, checked for everything but the secret. */
export interface SignedClaims {
  readonly accessKeyId: string
  /** `YYYYMMDDTHHMMSSZ`, as signed. */
  readonly longDate: string
  /** `YYYYMMDD/<region>/s3/aws4_request`. */
  readonly scope: string
  readonly shortDate: string
  readonly region: string
  /** Lower-case hex, as sent. */
  readonly signature: string
  /** What the request says its payload is: a hex SHA-256, `UNSIGNED-PAYLOAD` or a `STREAMING-...` mode. */
  readonly payloadHash: string
  readonly presigned: boolean
  /** The strings to sign the request may have been signed as (the raw path first; then its plain re-encoding when that differs). */
  readonly stringsToSign: readonly string[]
}

export const hmac = (key: Uint8Array | string, data: string): Buffer => createHmac('sha256', key).update(data).digest()
export const sha256Hex = (data: Uint8Array | string): string => createHash('sha256').update(data).digest('hex')

/** The key a secret signs with on `shortDate` in `region` (for S3). */
export function signingKey(secret: string, shortDate: string, region: string): Buffer {
  let k = hmac(`AWS4${secret}`, shortDate)
  for (const s of [region, 's3', 'aws4_request']) k = hmac(k, s)
  return k
}

/** Whether `signature` (hex) is the HMAC of `stringToSign` under `key`; constant time. */
export function signatureMatches(key: Uint8Array, stringToSign: string, signature: string): boolean {
  const want = hmac(key, stringToSign)
  const got = Buffer.from(signature, 'hex')
  return got.byteLength === want.byteLength && timingSafeEqual(got, want)
}

/** The signing key of `secret` when it made the request's signature; null when it did not. */
export function keyIfSigned(claims: SignedClaims, secret: string): Buffer | null {
  const key = signingKey(secret, claims.shortDate, claims.region)
  let ok = false
  for (const s of claims.stringsToSign) if (signatureMatches(key, s, claims.signature)) ok = true
  return ok ? key : null
}

const bytes = (d: string | ArrayBuffer | ArrayBufferView): string | Uint8Array =>
  typeof d === 'string' ? d : d instanceof ArrayBuffer ? new Uint8Array(d) : new Uint8Array(d.buffer, d.byteOffset, d.byteLength)

/** The SHA-256 the canonical request is hashed with, on node:crypto (smithy's hash interface; clients in bench/ and test/ sign with it too). */
export class Sha256 {
  readonly #h
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.#h = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret))
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.#h.update(bytes(data))
  }
  async digest(): Promise<Uint8Array> {
    return this.#h.digest()
  }
  reset(): void {}
}

type SmithyRequest = Parameters<typeof getCanonicalHeaders>[0]

/** smithy's canonical request and string to sign, for a request received rather than sent. */
class StringsToSign extends SignatureV4 {
  constructor() {
    super({ service: 's3', region: 'unused', credentials: { accessKeyId: '', secretAccessKey: '' }, sha256: Sha256, uriEscapePath: false, applyChecksum: false })
  }
  /** `request.headers` hold each value's bytes one character per byte (rawValue). */
  make(request: SmithyRequest, signed: ReadonlySet<string>, payloadHash: string, longDate: string, scope: string): string {
    const headers = getCanonicalHeaders(request, undefined, signed as Set<string>)
    const canonical = this.createCanonicalRequest(request, headers, payloadHash)
    // Hashed as bytes: the method, path and query lines as UTF-8 (as smithy would), the
    // header lines byte for byte, the rest ASCII. No line holds a newline of its own
    // (header values cannot; the query is encoded).
    const lines = canonical.split('\n')
    const headerEnd = 3 + Object.keys(headers).length
    const bytes = Buffer.concat([
      Buffer.from(lines.slice(0, 3).join('\n') + '\n', 'utf8'),
      Buffer.from(lines.slice(3, headerEnd).join('\n'), 'latin1'),
      Buffer.from('\n' + lines.slice(headerEnd).join('\n'), 'utf8'),
    ])
    return `${ALGORITHM_IDENTIFIER}\n${longDate}\n${scope}\n${sha256Hex(bytes)}`
  }
}
const strings = new StringsToSign()

const malformed = (detail: string) => new S3Error('AuthorizationHeaderMalformed', `The authorization header is malformed; ${detail}`, 400)
const queryError = (detail: string) => new S3Error('AuthorizationQueryParametersError', detail, 400)
const LONG_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9a-z-]+$/
const QUERY_AUTH = ['X-Amz-Algorithm', 'X-Amz-Credential', 'X-Amz-Date', 'X-Amz-Expires', 'X-Amz-SignedHeaders', 'X-Amz-Signature'] as const

/** `YYYYMMDDTHHMMSSZ` → epoch ms; NaN when malformed. */
function parseLongDate(s: string): number {
  const m = LONG_DATE.exec(s)
  if (!m) return NaN
  const [y, mo, d, h, mi, se] = m.slice(1).map(Number) as [number, number, number, number, number, number]
  const t = Date.UTC(y, mo - 1, d, h, mi, se)
  return new Date(t).getUTCDate() === d && h < 24 && mi < 60 && se < 60 ? t : NaN
}
const toLongDate = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/[-:]/g, '')

/** A header's bytes as sent, one character per byte (the engine's `headerBytes`; else the value's UTF-8). */
function rawValue(req: HttpRequest, name: string): string {
  const bytes = req.headerBytes?.(name)
  if (bytes !== undefined) return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1')
  return Buffer.from(req.header(name) ?? '', 'utf8').toString('latin1')
}

/** Whether the request carries any signature at all (else it is anonymous). */
export const isSigned = (req: HttpRequest): boolean => req.header('authorization') !== undefined || req.query.has('X-Amz-Signature') || req.query.has('X-Amz-Algorithm')

/**
 * Parses and checks the request's signature claims (everything but the secret).
 * @param region the endpoint's region; '*' takes any
 * @throws S3Error
 */
export async function readClaims(req: HttpRequest, opts: { readonly region: string; readonly now: number }): Promise<SignedClaims> {
  const auth = req.header('authorization')
  const presigned = req.query.has('X-Amz-Signature') || req.query.has('X-Amz-Algorithm')
  if (auth !== undefined && presigned) {
    throw new S3Error('InvalidArgument', 'Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter or the Authorization header should be specified', 400, { ArgumentName: 'Authorization' })
  }
  if (req.header('x-amz-security-token') !== undefined || req.query.has('X-Amz-Security-Token')) {
    throw new S3Error('InvalidToken', 'The provided token is malformed or otherwise invalid: this endpoint issues no session tokens', 400)
  }
  const parts = presigned ? queryParts(req) : headerParts(auth ?? '', req.header('x-amz-date'))
  const bad = presigned ? queryError : malformed

  const cred = parts.credential.split('/')
  if (cred.length !== 5 || cred[0] === '') throw bad('the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".')
  const [accessKeyId, shortDate, region, service, terminal] = cred as [string, string, string, string, string]
  if (!/^[a-f0-9]{64}$/.test(parts.signature)) throw bad('the Signature is not 64 lower-case hexadecimal digits.')
  if (!/^[^;]+(;[^;]+)*$/.test(parts.signedHeaders)) throw bad('the SignedHeaders are mal-formed.')
  const signed = parts.signedHeaders.split(';')
  if (!signed.every((h) => HEADER_NAME.test(h))) throw bad('the SignedHeaders are mal-formed.')
  if (!signed.includes('host')) throw bad('the SignedHeaders must include host.')

  // The request's time: signed as x-amz-date (or, in a header-signed request, the Date header).
  let longDate = parts.date
  let time = longDate === undefined ? NaN : parseLongDate(longDate)
  if (!presigned && longDate === undefined) {
    time = Date.parse(req.header('date') ?? '')
    if (!Number.isNaN(time)) longDate = toLongDate(time)
  }
  if (Number.isNaN(time) || longDate === undefined) {
    if (presigned) throw queryError('X-Amz-Date must be in the ISO8601 Long Format "yyyyMMdd\'T\'HHmmss\'Z\'"')
    throw new S3Error('AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header', 403)
  }
  if (shortDate !== longDate.slice(0, 8)) throw bad(`Invalid credential date "${shortDate}". This date is not the same as X-Amz-Date: "${longDate.slice(0, 8)}".`)
  if (opts.region !== '*' && region !== opts.region) throw new S3Error(presigned ? 'AuthorizationQueryParametersError' : 'AuthorizationHeaderMalformed', `${presigned ? 'Error parsing the X-Amz-Credential parameter;' : 'The authorization header is malformed;'} the region '${region}' is wrong; expecting '${opts.region}'`, 400, { Region: opts.region })
  if (service !== 's3') throw bad(`incorrect service "${service}". This endpoint is "s3".`)
  if (terminal !== 'aws4_request') throw bad(`incorrect terminal "${terminal}". This endpoint uses "aws4_request".`)

  const server = new Date(opts.now).toISOString()
  if (presigned) {
    const expires = parts.expires!
    if (!/^\d{1,7}$/.test(expires)) throw queryError('X-Amz-Expires should be a number')
    const seconds = Number(expires)
    if (seconds < 1) throw queryError('X-Amz-Expires must be non-negative')
    if (seconds > MAX_PRESIGN_SECONDS) throw queryError(`X-Amz-Expires must be less than a week (in seconds) that is; ${MAX_PRESIGN_SECONDS} seconds`)
    if (time > opts.now + MAX_SKEW_MS) throw new S3Error('AccessDenied', 'Request is not valid yet', 403, { 'X-Amz-Date': longDate, ServerTime: server })
    if (opts.now > time + seconds * 1000) {
      throw new S3Error('AccessDenied', 'Request has expired', 403, { 'X-Amz-Expires': expires, Expires: new Date(time + seconds * 1000).toISOString(), ServerTime: server })
    }
  } else if (Math.abs(time - opts.now) > MAX_SKEW_MS) {
    throw new S3Error('RequestTimeTooSkewed', 'The difference between the request time and the current time is too large.', 403, {
      RequestTime: new Date(time).toISOString(),
      ServerTime: server,
      MaxAllowedSkewMilliseconds: String(MAX_SKEW_MS),
    })
  }

  const payloadHash = presigned ? (req.query.get('X-Amz-Content-Sha256') ?? UNSIGNED_PAYLOAD) : req.header('x-amz-content-sha256')
  if (payloadHash === undefined) throw new S3Error('InvalidRequest', 'Missing required header for this request: x-amz-content-sha256', 400)

  // Every x-amz-* header sent is part of what was signed (else one could be added or changed on the way: x-amz-copy-source, x-amz-meta-*).
  const set = new Set(signed)
  const unsigned = [...req.headers()].map(([name]) => name).filter((name) => name.startsWith('x-amz-') && !set.has(name))
  if (unsigned.length > 0) throw new S3Error('AccessDenied', 'There were headers present in the request which were not signed', 403, { HeadersNotSigned: unsigned.join(', ') })

  // Null-prototype records: a header or parameter named __proto__ is data like any other.
  // Each value is its bytes as sent, one character per byte: the canonical request is
  // hashed over those bytes (a value outside ASCII is signed as the client sent it).
  const headers: Record<string, string> = Object.create(null) as Record<string, string>
  for (const h of signed) headers[h] = rawValue(req, h)
  const query: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>
  for (const [k, v] of req.query) {
    const had = query[k]
    query[k] = had === undefined ? v : Array.isArray(had) ? [...had, v] : [had, v]
  }
  const scope = `${shortDate}/${region}/${service}/${terminal}`
  const stringsToSign: string[] = []
  for (const path of canonicalPaths(req.path)) {
    const request = { method: req.method, protocol: 'http:', hostname: headers.host ?? '', path, query, headers } as SmithyRequest
    stringsToSign.push(strings.make(request, set, payloadHash, longDate, scope))
  }
  return { accessKeyId, longDate, scope, shortDate, region, signature: parts.signature, payloadHash, presigned, stringsToSign }
}

interface Parts {
  readonly credential: string
  readonly signedHeaders: string
  readonly signature: string
  /** x-amz-date (header, or X-Amz-Date of the query). */
  readonly date: string | undefined
  readonly expires?: string
}

/** `AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...`. */
function headerParts(auth: string, amzDate: string | undefined): Parts {
  const m = /^(\S+)\s+(.*)$/s.exec(auth.trim())
  if (!m || m[1] !== 'AWS4-HMAC-SHA256') {
    if (/^AWS\s/.test(auth)) throw new S3Error('InvalidRequest', 'The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.', 400)
    throw malformed('the authorization mechanism is not AWS4-HMAC-SHA256.')
  }
  const fields = new Map<string, string>()
  for (const f of m[2]!.split(',')) {
    const eq = f.indexOf('=')
    const name = f.slice(0, eq).trim()
    if (eq < 0 || fields.has(name)) throw malformed(`the field "${f.trim().slice(0, 40)}" is mal-formed or repeated.`)
    fields.set(name, f.slice(eq + 1).trim())
  }
  const credential = fields.get('Credential')
  const signedHeaders = fields.get('SignedHeaders')
  const signature = fields.get('Signature')
  if (credential === undefined || signedHeaders === undefined || signature === undefined || fields.size !== 3) {
    throw malformed('it must have exactly the fields Credential, SignedHeaders and Signature.')
  }
  return { credential, signedHeaders, signature, date: amzDate }
}

function queryParts(req: HttpRequest): Parts {
  const missing = QUERY_AUTH.filter((p) => req.query.getAll(p).length !== 1)
  if (missing.length > 0) {
    throw queryError('Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.')
  }
  if (req.query.get('X-Amz-Algorithm') !== 'AWS4-HMAC-SHA256') throw queryError('X-Amz-Algorithm only supports "AWS4-HMAC-SHA256"')
  return {
    credential: req.query.get('X-Amz-Credential')!,
    signedHeaders: req.query.get('X-Amz-SignedHeaders')!,
    signature: req.query.get('X-Amz-Signature')!,
    date: req.query.get('X-Amz-Date')!,
    expires: req.query.get('X-Amz-Expires')!,
  }
}

/**
 * The canonical URIs the path may have been signed as: the path exactly as sent (what
 * S3 signs), then, when it differs, each segment decoded and encoded again the way AWS
 * SDKs encode (for clients that send a character raw that they encoded when signing).
 * Both name the same key.
 */
function canonicalPaths(raw: string): string[] {
  let again: string
  try {
    again = raw
      .split('/')
      .map((s) => encodeURIComponent(decodeURIComponent(s)).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`))
      .join('/')
  } catch {
    return [raw]
  }
  return again === raw ? [raw] : [raw, again]
}
