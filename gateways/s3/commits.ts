/**
 * @module gateways/s3/commits
 * One commit at a time per object of a view: the close that publishes it, the stat of
 * what it published and the record of its ETag. Without it, two PUTs of one key could
 * interleave (A publishes, B publishes, A stats) and A's MD5 be recorded against B's
 * bytes — on a storage with whole-second times the record would even look valid.
 * A multipart Complete writes and publishes in one worker task (the view's
 * `commitStaged`): its whole write is inside, so a PutObject of the same key that
 * finishes meanwhile publishes after it.
 */
import type { View } from '../../core/view.js'

const tails = new Map<string, Promise<void>>()

export async function serially<T>(fs: View, path: string, fn: () => Promise<T>): Promise<T> {
  const key = `${fs.identity}\0${path}`
  const prev = tails.get(key) ?? Promise.resolve()
  let release!: () => void
  const mine = new Promise<void>((resolve) => (release = resolve))
  const tail = prev.then(() => mine)
  tails.set(key, tail)
  await prev
  try {
    return await fn()
  } finally {
    release()
    if (tails.get(key) === tail) tails.delete(key)
  }
}
