/**
 * @module workers/hashing
 * WORKER THREAD. Digests of the bytes a driver writes, computed as they go by, next to
 * the write (workers/entry.ts uploads, workers/handles/ commits): the MD5 a gateway
 * answers as ETag, and the SHA-256 a client signed the body with, checked at the body's
 * end, before the driver commits anything.
 */
import { createHash } from 'node:crypto'
import { FsError } from '../core/errors.js'

export interface HashingOptions {
  /** Computed, its hex digest answered by `digest()`. */
  readonly digest?: 'md5'
  /** The body's SHA-256 (hex): another is EINTEGRITY, thrown by the body at its end. */
  readonly sha256?: string
}

/**
 * The bytes of `body` as they go by the driver, hashed on this thread. Each chunk is
 * hashed while the driver writes it (the write's system calls run off this thread): the
 * hashes and the write overlap instead of taking turns. With `sha256`, the body's end
 * waits for the hash and throws EINTEGRITY on a mismatch instead of ending: the driver
 * then discards what it wrote, as for any failing body.
 */
export function hashing(body: AsyncIterable<Uint8Array>, opts: HashingOptions): { body: AsyncIterable<Uint8Array>; digest(): Promise<string | undefined> } {
  const md5 = opts.digest === undefined ? null : createHash(opts.digest)
  const sha = opts.sha256 === undefined ? null : createHash('sha256')
  let hashed: Promise<void> = Promise.resolve()
  async function* pass(): AsyncIterable<Uint8Array> {
    for await (const chunk of body) {
      hashed = new Promise<void>((resolve) =>
        setImmediate(() => {
          md5?.update(chunk)
          sha?.update(chunk)
          resolve()
        }),
      )
      yield chunk
      await hashed
    }
    if (sha !== null) {
      const got = sha.digest('hex')
      if (got !== opts.sha256!.toLowerCase()) throw new FsError('EINTEGRITY', `the body's SHA-256 is ${got}, not the ${opts.sha256} it was sent with: nothing was written`)
    }
  }
  return {
    body: md5 === null && sha === null ? body : pass(),
    digest: async () => {
      await hashed
      return md5?.digest('hex')
    },
  }
}
