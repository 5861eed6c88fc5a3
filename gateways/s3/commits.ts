/**
 * @module gateways/s3/commits
 * One commit at a time per object of a view: the write that publishes it and the record
 * of its ETag (keyed by the time and size the write committed). Without it, two PUTs of
 * one key could interleave (A publishes, B publishes, B records, A records) and the
 * record left be A's — on a storage with whole-second times it could even look valid
 * for B's bytes.
 *
 * `serially` runs a step that commits and records (a multipart Complete:
 * its write and publication are one worker task, the view's `commitStaged`, inside).
 * `inCommitOrder` does the same for an upload whose bytes stream to a worker that
 * commits as soon as they end: it holds back the END of the body until the object's
 * earlier commits are recorded, so the bytes flow meanwhile and only the commit waits.
 */
import type { View } from '../../core/view.js'

const tails = new Map<string, Promise<void>>()

/** Takes the object's turn; resolves with its release once the turns before it are over. */
function turn(fs: View, path: string): { ready: Promise<void>; release: () => void } {
  const key = `${fs.identity}\0${path}`
  const prev = tails.get(key) ?? Promise.resolve()
  let done!: () => void
  const mine = new Promise<void>((resolve) => (done = resolve))
  const tail = prev.then(() => mine)
  tails.set(key, tail)
  return {
    ready: prev,
    release: () => {
      done()
      if (tails.get(key) === tail) tails.delete(key)
    },
  }
}

export async function serially<T>(fs: View, path: string, fn: () => Promise<T>): Promise<T> {
  const t = turn(fs, path)
  await t.ready
  try {
    return await fn()
  } finally {
    t.release()
  }
}

/**
 * `body`, whose end waits for the object's turn: pass it to the write, record what the
 * write committed, then call `done()` — always, whatever happened: it gives the turn
 * up (or, when the body never reached its end, makes sure it never takes one).
 */
export function inCommitOrder(fs: View, path: string, body: AsyncIterable<Uint8Array>): { body: AsyncIterable<Uint8Array>; done(): void } {
  let release: (() => void) | null = null
  let over = false
  async function* ordered(): AsyncIterable<Uint8Array> {
    yield* body
    if (over) return
    const t = turn(fs, path)
    release = t.release
    await t.ready
  }
  return {
    body: ordered(),
    done: () => {
      over = true
      release?.()
    },
  }
}
