/**
 * @module workers/hashing
 * WORKER THREAD. A digest of the bytes a driver writes (a gateway's ETag), computed as
 * they go by, next to the write (workers/entry.ts uploads, workers/handles/ commits).
 */
import type { Hash } from 'node:crypto'

/**
 * The bytes of `body` as they go by the driver, fed to `hash` on this thread (a gateway's
 * ETag). Each chunk is hashed while the driver writes it (the write's system calls run
 * off this thread): the hash and the write overlap instead of taking turns.
 */
export function hashing(body: AsyncIterable<Uint8Array>, hash: Hash): { body: AsyncIterable<Uint8Array>; digest(): Promise<string> } {
  let hashed: Promise<void> = Promise.resolve()
  async function* pass(): AsyncIterable<Uint8Array> {
    for await (const chunk of body) {
      hashed = new Promise<void>((resolve) => setImmediate(() => resolve(void hash.update(chunk))))
      yield chunk
      await hashed
    }
  }
  return {
    body: pass(),
    digest: async () => {
      await hashed
      return hash.digest('hex')
    },
  }
}

