/**
 * @module gateways/s3/meta/md5
 * MD5 as S3 uses it for ETags: computed while the bytes stream through, never by
 * reading them again; and the multipart form, the MD5 of the parts' binary MD5s
 * followed by `-<number of parts>`.
 */
import { createHash } from 'node:crypto'

/** A body that hashes what passes through it. */
export interface HashingBody {
  /** Iterate once; every chunk is hashed as it goes by. */
  readonly body: AsyncIterable<Uint8Array>
  /** Bytes seen so far. */
  readonly bytes: number
  /** Hex MD5 of the whole body: only once it was read to its end (throws before). */
  digest(): string
}

/** Wraps `body` so that its MD5 is known once it has been read to the end. */
export function md5While(body: AsyncIterable<Uint8Array>): HashingBody {
  const hash = createHash('md5')
  let bytes = 0
  let hex: string | null = null
  async function* pass(): AsyncIterable<Uint8Array> {
    for await (const chunk of body) {
      hash.update(chunk)
      bytes += chunk.byteLength
      yield chunk
    }
    hex = hash.digest('hex')
  }
  return {
    body: pass(),
    get bytes() {
      return bytes
    },
    digest() {
      if (hex === null) throw new Error('the body was not read to its end')
      return hex
    },
  }
}

/** The ETag S3 gives a multipart object: MD5 of the concatenated binary part MD5s, `-N`. */
export function multipartEtag(partMd5s: readonly string[]): string {
  const hash = createHash('md5')
  for (const hex of partMd5s) hash.update(Buffer.from(hex, 'hex'))
  return `${hash.digest('hex')}-${partMd5s.length}`
}
