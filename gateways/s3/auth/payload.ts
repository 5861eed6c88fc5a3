/**
 * @module gateways/s3/auth/payload
 * A request's payload, checked while it streams against everything the request says of
 * it: the signed SHA-256 (`x-amz-content-sha256`), Content-MD5, an `x-amz-checksum-*`
 * header or trailer, and for aws-chunked bodies each chunk's signature, chained from
 * the request's, and the trailer's (gateways/s3/auth/chunked.ts). Nothing is buffered.
 *
 * The headers are read before anything else (`planPayload`: malformed values are
 * refused at once); what can only be known at the end is checked at the end, and the
 * iterable then throws the S3Error instead of completing: consumers commit nothing
 * before it completed.
 */
import { createHash } from 'node:crypto'
import type { HttpRequest } from '../../../core/http.js'
import { S3Error } from '../errors.js'
import { CHECKSUMS, CHECKSUM_BYTES, type ChecksumName, type RunningChecksum, UNSUPPORTED_CHECKSUMS, runningChecksum } from './checksums.js'
import { type ChunkSink, decodeAwsChunked, malformedTrailer } from './chunked.js'
import { EMPTY_SHA256, UNSIGNED_PAYLOAD, sha256Hex, signatureMatches } from './sigv4.js'

export type Streaming = 'signed' | 'signed-trailer' | 'unsigned-trailer'

const STREAMING: Readonly<Record<string, Streaming>> = {
  'STREAMING-AWS4-HMAC-SHA256-PAYLOAD': 'signed',
  'STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER': 'signed-trailer',
  'STREAMING-UNSIGNED-PAYLOAD-TRAILER': 'unsigned-trailer',
}

export interface PayloadPlan {
  /** The signed SHA-256 (lower-case hex) to check; null: none (unsigned, or streaming). */
  readonly sha256: string | null
  readonly streaming: Streaming | null
  readonly md5: string | null
  /** A checksum to check: its value from a header, or (null) from the trailer. */
  readonly checksum: { readonly name: ChecksumName; readonly expected: string | null } | null
  /** The payload's length when known: x-amz-decoded-content-length for aws-chunked bodies, else Content-Length. */
  readonly length: number | null
}

/** The signing key and chain seed that chunk and trailer signatures are checked with. */
export interface ChunkSigning {
  readonly key: Uint8Array
  readonly longDate: string
  readonly scope: string
  /** The request's own signature: the first chunk's "previous signature". */
  readonly seed: string
}

const invalidArgument = (name: string, value: string, msg: string) => new S3Error('InvalidArgument', msg, 400, { ArgumentName: name, ArgumentValue: value.slice(0, 200) })
const NAME_OF: Readonly<Record<ChecksumName, string>> = { crc32: 'CRC32', crc32c: 'CRC32C', sha1: 'SHA1', sha256: 'SHA256' }

/** Reads what the request says of its payload. @throws S3Error on a malformed or contradictory claim */
export function planPayload(req: HttpRequest, claimed: string, presigned: boolean): PayloadPlan {
  let sha256: string | null = null
  const streaming = STREAMING[claimed] ?? null
  if (/^[0-9a-fA-F]{64}$/.test(claimed)) sha256 = claimed.toLowerCase()
  else if (claimed !== UNSIGNED_PAYLOAD && streaming === null) {
    throw invalidArgument('x-amz-content-sha256', claimed, 'x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER or a valid sha256 value.')
  }
  if (streaming !== null && presigned) throw new S3Error('InvalidRequest', 'A presigned URL cannot carry an aws-chunked payload', 400)

  const md5 = req.header('content-md5')
  if (md5 !== undefined && !(/^[A-Za-z0-9+/]{22}==$/.test(md5.trim()))) throw new S3Error('InvalidDigest', 'The Content-MD5 you specified was invalid.', 400)

  for (const n of UNSUPPORTED_CHECKSUMS) {
    if (req.header(`x-amz-checksum-${n}`) !== undefined || req.header('x-amz-trailer')?.trim().toLowerCase() === `x-amz-checksum-${n}`) {
      throw new S3Error('InvalidRequest', `The ${n.toUpperCase()} checksum is not supported by this endpoint: use CRC32, CRC32C, SHA1 or SHA256.`, 400)
    }
  }
  const given = CHECKSUMS.filter((n) => req.header(`x-amz-checksum-${n}`) !== undefined)
  if (given.length > 1) throw new S3Error('InvalidRequest', 'Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.', 400)
  let checksum: PayloadPlan['checksum'] = null
  if (given.length === 1) {
    const name = given[0]!
    const value = req.header(`x-amz-checksum-${name}`)!.trim()
    if (Buffer.from(value, 'base64').byteLength !== CHECKSUM_BYTES[name] || !/^[A-Za-z0-9+/]+=*$/.test(value)) {
      throw new S3Error('InvalidRequest', `Value for x-amz-checksum-${name} header is invalid.`, 400)
    }
    checksum = { name, expected: value }
  }
  const trailer = req.header('x-amz-trailer')?.trim().toLowerCase()
  if (streaming === 'signed-trailer' || streaming === 'unsigned-trailer') {
    const name = CHECKSUMS.find((n) => trailer === `x-amz-checksum-${n}`)
    if (name === undefined) throw invalidArgument('x-amz-trailer', trailer ?? '', 'x-amz-trailer must name one checksum: x-amz-checksum-crc32, -crc32c, -sha1 or -sha256')
    if (checksum) throw new S3Error('InvalidRequest', 'Expecting a single x-amz-checksum- header or trailer. Multiple checksum Types are not allowed.', 400)
    checksum = { name, expected: null }
  } else if (trailer !== undefined) {
    throw new S3Error('InvalidRequest', 'x-amz-trailer needs x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER or STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER', 400)
  }

  let length = req.contentLength
  if (streaming !== null) {
    const decoded = req.header('x-amz-decoded-content-length')
    if (decoded === undefined) throw new S3Error('MissingContentLength', 'You must provide the x-amz-decoded-content-length HTTP header with an aws-chunked payload.', 411)
    if (!/^\d{1,15}$/.test(decoded.trim())) throw invalidArgument('x-amz-decoded-content-length', decoded, 'x-amz-decoded-content-length must be a number of bytes')
    length = Number(decoded)
  }
  return { sha256, streaming, md5: md5?.trim() ?? null, checksum, length }
}

/**
 * The payload as the consumer reads it: decoded, and checked as `plan` says; with
 * `sha256Elsewhere`, all but the signed SHA-256, which the consumer checks itself where it
 * writes the bytes, before it commits them (gateways/s3/auth/index.ts `S3Caller.payload`).
 */
export async function* checkedPayload(src: AsyncIterable<Uint8Array>, plan: PayloadPlan, signing: ChunkSigning, sha256Elsewhere = false): AsyncGenerator<Uint8Array> {
  const sha = plan.sha256 === null || sha256Elsewhere ? null : createHash('sha256')
  const md5 = plan.md5 === null ? null : createHash('md5')
  const sum: RunningChecksum | null = plan.checksum ? runningChecksum(plan.checksum.name) : null
  let total = 0
  const digest = (b: Uint8Array) => {
    total += b.byteLength
    sha?.update(b)
    md5?.update(b)
    sum?.update(b)
  }
  let trailerValue: string | null = null
  if (plan.streaming === null) {
    for await (const b of src) {
      digest(b)
      yield b
    }
  } else {
    const sink = new Chunks(plan, signing, (v) => (trailerValue = v))
    for await (const b of decodeAwsChunked(src, sink)) {
      digest(b)
      yield b
    }
  }
  if (plan.streaming !== null && total !== plan.length) {
    throw new S3Error('IncompleteBody', `The aws-chunked body holds ${total} bytes, not the ${plan.length} of x-amz-decoded-content-length.`, 400)
  }
  if (sha && plan.sha256 !== null) {
    const got = sha.digest('hex')
    if (got !== plan.sha256) {
      throw new S3Error('XAmzContentSHA256Mismatch', "The provided 'x-amz-content-sha256' header does not match what was computed.", 400, { ClientComputedContentSHA256: plan.sha256, S3ComputedContentSHA256: got })
    }
  }
  if (md5 && plan.md5 !== null && md5.digest('base64') !== plan.md5) throw new S3Error('BadDigest', 'The Content-MD5 you specified did not match what we received.', 400)
  if (sum && plan.checksum) {
    const want = plan.checksum.expected ?? trailerValue
    if (want === null) throw malformedTrailer()
    if (sum.digest() !== want) throw new S3Error('BadDigest', `The ${NAME_OF[plan.checksum.name]} you specified did not match the calculated checksum.`, 400)
  }
}

/** Chunk signatures (chained from the request's), the decoded length, and the trailer. */
class Chunks implements ChunkSink {
  readonly signed: boolean
  readonly trailer: boolean
  readonly #plan: PayloadPlan
  readonly #signing: ChunkSigning
  readonly #onChecksum: (value: string) => void
  #prev: string
  #signature: string | null = null
  #hash = createHash('sha256')
  #declared = 0

  constructor(plan: PayloadPlan, signing: ChunkSigning, onChecksum: (value: string) => void) {
    this.#plan = plan
    this.#signing = signing
    this.#onChecksum = onChecksum
    this.signed = plan.streaming !== 'unsigned-trailer'
    this.trailer = plan.streaming !== 'signed'
    this.#prev = signing.seed
  }

  chunkStart(size: number, signature: string | null): void {
    this.#declared += size
    if (this.#declared > (this.#plan.length ?? 0)) {
      throw new S3Error('InvalidChunkSizeError', `The chunk sizes add up to more than the ${this.#plan.length} bytes of x-amz-decoded-content-length.`, 400)
    }
    this.#signature = signature
    if (this.signed) this.#hash = createHash('sha256')
  }

  data(bytes: Uint8Array): void {
    if (this.signed) this.#hash.update(bytes)
  }

  chunkEnd(): void {
    if (!this.signed) return
    const { longDate, scope, key } = this.#signing
    const toSign = ['AWS4-HMAC-SHA256-PAYLOAD', longDate, scope, this.#prev, EMPTY_SHA256, this.#hash.digest('hex')].join('\n')
    if (!signatureMatches(key, toSign, this.#signature!)) {
      throw new S3Error('SignatureDoesNotMatch', 'The chunk signature we calculated does not match the signature you provided.', 403, { SignatureProvided: this.#signature! })
    }
    this.#prev = this.#signature!
  }

  trailerEnd(fields: ReadonlyArray<readonly [string, string]>): void {
    const name = `x-amz-checksum-${this.#plan.checksum!.name}`
    const sums = fields.filter(([k]) => k === name)
    const sigs = fields.filter(([k]) => k === 'x-amz-trailer-signature')
    if (sums.length !== 1 || sigs.length !== (this.signed ? 1 : 0) || fields.length !== sums.length + sigs.length) throw malformedTrailer()
    if (this.signed) {
      const { longDate, scope, key } = this.#signing
      const toSign = ['AWS4-HMAC-SHA256-TRAILER', longDate, scope, this.#prev, sha256Hex(`${name}:${sums[0]![1]}\n`)].join('\n')
      if (!/^[0-9a-f]{64}$/.test(sigs[0]![1]) || !signatureMatches(key, toSign, sigs[0]![1])) {
        throw new S3Error('SignatureDoesNotMatch', 'The trailer signature we calculated does not match the signature you provided.', 403)
      }
    }
    this.#onChecksum(sums[0]![1])
  }
}
