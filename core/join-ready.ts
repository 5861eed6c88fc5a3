/**
 * @module core/join-ready
 * The small pieces of a stream, joined into chunks before they cross to a worker. A
 * request body read by node:http comes in the socket's 64 KiB pieces, and every piece
 * that crosses alone costs a message each way and a write in the worker (measured: an
 * S3 PUT's worker spent more time on those than on its MD5).
 *
 * The pieces that come in quick succession are copied into one chunk of up to
 * `chunkBytes` (core/chunk-buffer.ts: a buffer that owns its memory, moved across, not
 * copied again); a chunk goes on when it is full, or `waitMs` after its first byte came
 * (about 1 MiB at 1 GB/s), so a slow sender's bytes are held back that long at most. A
 * large piece that owns its memory goes as it is. The source is read one piece ahead of
 * the consumer.
 */
import { ChunkBuffer } from './chunk-buffer.js'

const NOT_YET = Symbol('not yet')
const ownsBuffer = (b: Uint8Array): boolean => b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.buffer instanceof ArrayBuffer

export async function* joinReady(body: AsyncIterable<Uint8Array>, chunkBytes = 1024 * 1024, waitMs = 1): AsyncGenerator<Uint8Array> {
  const it = body[Symbol.asyncIterator]()
  const buf = new ChunkBuffer(chunkBytes)
  let next = it.next()
  let done = false
  // Resolves when the chunk being joined has waited long enough (set with its first byte).
  let due: Promise<typeof NOT_YET> | null = null
  let timer: NodeJS.Timeout | undefined
  const take = (): Uint8Array => {
    clearTimeout(timer)
    due = null
    return buf.take()
  }
  try {
    for (;;) {
      if (buf.bytes > 0) due ??= new Promise((resolve) => (timer = setTimeout(() => resolve(NOT_YET), waitMs)))
      const r = due === null ? await next : await Promise.race([next, due])
      if (r === NOT_YET) {
        yield take()
        continue
      }
      if (r.done) break
      next = it.next()
      const piece = r.value
      if (buf.bytes === 0 && piece.byteLength >= chunkBytes / 4 && ownsBuffer(piece)) {
        yield piece
        continue
      }
      for (let at = 0; at < piece.byteLength; ) {
        at += buf.add(piece.subarray(at))
        if (buf.full) yield take()
      }
    }
    done = true
    if (buf.bytes > 0) yield take()
  } finally {
    clearTimeout(timer)
    if (!done) {
      // Stopped early (the consumer, or the source failed): the piece read ahead is dropped,
      // and the source stopped once it settles (not waited for: a stalled sender).
      next.catch(() => {})
      void it.return?.()?.catch(() => {})
    }
  }
}
