/**
 * @module workers/plugins/plg_image_thumbnail
 * WORKER THREADS. The built-in plugin plg_image_thumbnail (docs/plugins.md), its worker
 * half: a PNG, JPEG, GIF (first frame) or WebP image as a small WebP, at most `size`
 * pixels on its longer side. Its main-thread half (front/plugins/plg_image_thumbnail.ts)
 * checks the query and the limits and sends them as `ThumbnailParams`.
 *
 * The file is collected up to `max_bytes` (refused from its size first), its first bytes
 * checked against the four formats' signatures (workers/plugins/image-input.ts), and sharp
 * decodes it with shrink-on-load, refusing more than `max_pixels` pixels.
 *
 * Cache: decoding is the cost, reading is not, so thumbnails are kept per thread under
 * the SHA-256 of the file's bytes and the size asked for: the same image (any user, any
 * path) is decoded once, and a thumbnail can only ever be served for the very bytes it was
 * made from, so nothing passes between users that they did not both have. Least recently
 * used first out, at most `cache_bytes` of thumbnails per thread.
 */
import { createHash } from 'node:crypto'
import type { SharpOptions } from 'sharp'
import { FsError } from '../../../core/errors.js'
import type { Plugin, TransformInput, TransformOutput } from '../../../core/plugin.js'
import { collectImage, loadSharp, notImage } from '../image-input.js'

export type ThumbnailParams = {
  readonly size: number
  readonly max_bytes: number
  readonly max_pixels: number
  readonly cache_bytes: number
}

export const NAME = 'plg_image_thumbnail'
const WEBP = 'image/webp'

/** Cached thumbnails of this thread, oldest use first (a Map keeps insertion order). */
const cache = new Map<string, Buffer>()
let cached = 0
/** For tests and metrics: thumbnails made (decoded) by this thread. */
export const made = { count: 0 }

export const imageThumbnail: Plugin = {
  name: NAME,
  transform: {
    async open(input: TransformInput): Promise<TransformOutput> {
      const thumb = await thumbnail(input as TransformInput<ThumbnailParams>)
      return { type: WEBP, body: once(thumb) }
    },
  },
}

const tooBig = (name: string, is: string, max: string) => new FsError('EFBIG', `${name} is ${is}: thumbnails are made of images up to ${max}`)

async function thumbnail({ params: p, file, body }: TransformInput<ThumbnailParams>): Promise<Buffer> {
  if (file.size > p.max_bytes) throw tooBig(file.name, `${file.size} bytes`, `${p.max_bytes} bytes`)
  const bytes = await collectImage(body, file.name, p.max_bytes, (is) => tooBig(file.name, is, `${p.max_bytes} bytes`))
  const key = `${p.size}:${createHash('sha256').update(bytes).digest('base64url')}`
  const hit = cache.get(key)
  if (hit) {
    cache.delete(key) // to the back: most recently used
    cache.set(key, hit)
    return hit
  }
  const thumb = await shrink(bytes, file.name, p)
  made.count++
  if (p.cache_bytes > 0 && thumb.length <= p.cache_bytes) {
    cache.set(key, thumb)
    cached += thumb.length
    for (const [k, v] of cache) {
      if (cached <= p.cache_bytes) break
      cache.delete(k)
      cached -= v.length
    }
  }
  return thumb
}

async function shrink(bytes: Buffer, name: string, p: ThumbnailParams): Promise<Buffer> {
  const sharp = await loadSharp()
  const opts: SharpOptions = { limitInputPixels: p.max_pixels, pages: 1, page: 0 }
  let w: number
  let h: number
  try {
    ;({ width: w, height: h } = (await sharp(bytes, { ...opts, limitInputPixels: false }).metadata()).autoOrient)
  } catch {
    throw notImage(name, 'could not be read as an image (damaged or not an image)')
  }
  if (!(w > 0 && h > 0)) throw notImage(name, 'has no pixels')
  if (w * h > p.max_pixels) throw tooBig(name, `${w}×${h} pixels`, `${p.max_pixels} pixels`)
  try {
    // fit inside size×size, never enlarged; shrink-on-load keeps a large JPEG small in memory.
    return await sharp(bytes, opts).autoOrient().resize(p.size, p.size, { fit: 'inside', withoutEnlargement: true }).webp({ quality: 70 }).toBuffer()
  } catch {
    throw notImage(name, 'could not be decoded (damaged or truncated image)')
  }
}

async function* once(chunk: Uint8Array): AsyncIterable<Uint8Array> {
  yield chunk
}
