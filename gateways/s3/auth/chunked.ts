/**
 * @module gateways/s3/auth/chunked
 * The `aws-chunked` framing of S3 streaming uploads, parsed incrementally
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming.html):
 *
 *     <hex size>[;chunk-signature=<64 hex>]\r\n<size bytes>\r\n ... 0[;chunk-signature=...]\r\n
 *     then \r\n, or trailer lines `name:value\r\n` and an empty line
 *
 * Memory is bounded whatever the sender does: data is passed on as it arrives (never
 * gathered into a chunk), a size or trailer line longer than a few KiB is refused, and
 * so is a size line that is not plain hexadecimal. What the chunks mean (signatures,
 * lengths, checksums) is the sink's business (gateways/s3/auth/payload.ts).
 */
import { S3Error } from '../errors.js'

/** What the framing tells, in order: chunkStart, data*, chunkEnd per chunk; then trailer. */
export interface ChunkSink {
  /** Chunks carry `;chunk-signature=` (else they must not). */
  readonly signed: boolean
  /** Trailer lines follow the last chunk. */
  readonly trailer: boolean
  chunkStart(size: number, signature: string | null): void
  data(bytes: Uint8Array): void
  chunkEnd(): void
  trailerEnd(fields: ReadonlyArray<readonly [string, string]>): void
}

const MAX_LINE = 4096
const MAX_TRAILER_LINES = 16
const SIZE = /^([0-9a-fA-F]{1,13})(?:;chunk-signature=([0-9a-f]{64}))?$/

export const framingError = (detail: string) => new S3Error('IncompleteBody', `The request body is not well-formed aws-chunked data: ${detail}`, 400)

export const malformedTrailer = () => new S3Error('MalformedTrailerError', 'The request contained trailing data that was not well-formed or did not conform to our published schema.', 400)

type State = 'size' | 'data' | 'data-end' | 'final-end' | 'trailer' | 'done'

/** The payload inside an aws-chunked body; throws S3Error (or the sink's errors) as soon as something is wrong. */
export async function* decodeAwsChunked(src: AsyncIterable<Uint8Array>, sink: ChunkSink): AsyncGenerator<Uint8Array> {
  let state: State = 'size'
  let left = 0
  let pending: Buffer | null = null
  const fields: [string, string][] = []
  for await (const piece of src) {
    const buf = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength)
    let i = 0
    while (i < buf.byteLength) {
      if (state === 'data') {
        const n = Math.min(left, buf.byteLength - i)
        const out = buf.subarray(i, i + n)
        i += n
        left -= n
        if (left === 0) state = 'data-end'
        sink.data(out)
        yield out
        continue
      }
      if (state === 'done') throw framingError('data after the last chunk')
      const nl = buf.indexOf(0x0a, i)
      const end = nl < 0 ? buf.byteLength : nl + 1
      const part = buf.subarray(i, end)
      i = end
      pending = pending ? Buffer.concat([pending, part]) : Buffer.from(part)
      if (pending.byteLength > MAX_LINE) {
        if (state === 'size') throw new S3Error('InvalidChunkSizeError', `A chunk header of the request body is longer than ${MAX_LINE} bytes.`, 400)
        if (state === 'trailer') throw malformedTrailer()
        throw framingError('a line is too long')
      }
      if (nl < 0) break
      const line = pending
      pending = null
      if (line.byteLength < 2 || line[line.byteLength - 2] !== 0x0d) throw framingError('a line does not end with CRLF')
      const text = line.subarray(0, line.byteLength - 2).toString('latin1')
      switch (state) {
        case 'size': {
          const m = SIZE.exec(text)
          if (!m || (m[2] === undefined) === sink.signed) {
            throw new S3Error('InvalidChunkSizeError', `The request body's chunk header ${JSON.stringify(text.slice(0, 100))} is not ${sink.signed ? '<hex size>;chunk-signature=<signature>' : '<hex size>'}`, 400)
          }
          const size = parseInt(m[1]!, 16)
          sink.chunkStart(size, m[2] ?? null)
          if (size > 0) {
            left = size
            state = 'data'
          } else {
            sink.chunkEnd()
            state = sink.trailer ? 'trailer' : 'final-end'
          }
          break
        }
        case 'data-end':
          if (text !== '') throw framingError('a chunk is longer than its size')
          sink.chunkEnd()
          state = 'size'
          break
        case 'final-end':
          if (text !== '') throw framingError('the last chunk is not followed by an empty line')
          state = 'done'
          break
        case 'trailer': {
          if (text === '') {
            sink.trailerEnd(fields)
            state = 'done'
            break
          }
          const colon = text.indexOf(':')
          if (colon <= 0 || fields.length >= MAX_TRAILER_LINES) throw malformedTrailer()
          fields.push([text.slice(0, colon).trim().toLowerCase(), text.slice(colon + 1).trim()])
          break
        }
      }
    }
  }
  if (state !== 'done') throw new S3Error('IncompleteBody', 'The request body ended before its last chunk.', 400)
}
