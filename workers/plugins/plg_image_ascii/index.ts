/**
 * @module workers/plugins/plg_image_ascii
 * WORKER THREADS. The built-in plugin plg_image_ascii (docs/plugins.md), its worker
 * half: the download transform that renders a PNG, JPEG, GIF (first frame) or WebP image
 * as ASCII art. Its main-thread half (front/plugins/plg_image_ascii.ts) reads the query
 * (`ascii`, `ascii_width`, `ascii_color`) and the configured limits before dispatch and
 * sends them as `AsciiParams`; this half trusts them.
 *
 * Memory: an image decoder needs the whole image, so the file is collected, up to
 * `max_bytes` (refused with 413 from its size before a byte is read, and again should it
 * grow while read). The first bytes are checked against the four formats' signatures, so
 * a file that is not one of them is refused (415) after one chunk. sharp (libvips) then
 * reads the header, refuses more than `max_pixels` pixels (413), and decodes with
 * shrink-on-load straight to the target grid. At most RENDERS_AT_ONCE images per thread
 * are held at once; other requests wait their turn holding nothing.
 */
import type { SharpOptions } from 'sharp'
import { FsError, isFsError } from '../../../core/errors.js'
import type { Plugin, TransformInput, TransformOutput } from '../../../core/plugin.js'
import { collectImage, loadSharp, notImage } from '../image-input.js'
import { gridFor, renderAscii } from './render.js'

/** What the main-thread half sends (front/plugins/plg_image_ascii.ts builds it). */
export type AsciiParams = {
  /** Columns, 10..400. */
  readonly width: number
  readonly color: boolean
  /** Largest image file, bytes. */
  readonly max_bytes: number
  /** Largest image, width × height. */
  readonly max_pixels: number
}

export const NAME = 'plg_image_ascii'
const TEXT = 'text/plain; charset=utf-8'
const RENDERS_AT_ONCE = 2

export const imageAscii: Plugin = {
  name: NAME,
  transform: {
    async open(input: TransformInput): Promise<TransformOutput> {
      const text = await asciiArt(input as TransformInput<AsciiParams>)
      return { type: TEXT, body: once(Buffer.from(text, 'utf8')) }
    },
  },
}

async function asciiArt(input: TransformInput<AsciiParams>): Promise<string> {
  const { params: p, file, signal } = input
  if (file.size > p.max_bytes) throw tooBig(file.name, `${file.size} bytes`, `${p.max_bytes} bytes`)
  const release = await slots.acquire(signal)
  try {
    const bytes = await collectImage(input.body, file.name, p.max_bytes, (is) => tooBig(file.name, is, `${p.max_bytes} bytes`))
    return await render(bytes, file.name, p)
  } finally {
    release()
  }
}

const tooBig = (name: string, is: string, max: string) => new FsError('EFBIG', `${name} is ${is}: ASCII art is made from images up to ${max}`)

// Reading ---------------------------------------------------------------------------

async function render(bytes: Buffer, name: string, p: AsciiParams): Promise<string> {
  const sharp = await loadSharp()
  // First frame only (`pages: 1`, sharp's default, said out loud): a GIF's or WebP's animation is ignored.
  const opts: SharpOptions = { limitInputPixels: p.max_pixels, pages: 1, page: 0 }
  let w: number
  let h: number
  try {
    const meta = await sharp(bytes, { ...opts, limitInputPixels: false }).metadata()
    ;({ width: w, height: h } = meta.autoOrient)
  } catch (err) {
    throw notImage(name, 'could not be read as an image (damaged or not an image)') // libvips' detail stays here
  }
  if (!(w > 0 && h > 0)) throw notImage(name, 'has no pixels')
  if (w * h > p.max_pixels) throw tooBig(name, `${w}×${h} pixels`, `${p.max_pixels} pixels`)
  const { cols, rows } = gridFor(w, h, p.width)
  let data: Buffer
  try {
    // resize() to the grid directly: sharp shrinks JPEG and WebP while decoding (shrink-on-load),
    // so a large photo never exists at full size in memory.
    ;({ data } = await sharp(bytes, opts)
      .autoOrient()
      .flatten({ background: '#ffffff' }) // transparency is paper: light
      .resize(cols, rows, { fit: 'fill' })
      .toColourspace('srgb')
      .removeAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true }))
  } catch (err) {
    if (isFsError(err)) throw err
    throw notImage(name, 'could not be decoded (damaged or truncated image)')
  }
  return renderAscii(data, cols, rows, p.color)
}

// Helpers ---------------------------------------------------------------------------

async function* once(chunk: Uint8Array): AsyncIterable<Uint8Array> {
  yield chunk
}

/** A counting semaphore: at most `n` images held at once in this thread. */
class Slots {
  #free: number
  readonly #waiting: (() => void)[] = []
  constructor(n: number) {
    this.#free = n
  }
  async acquire(signal: AbortSignal): Promise<() => void> {
    if (this.#free > 0) {
      this.#free--
    } else {
      await new Promise<void>((resolve, reject) => {
        const go = () => {
          signal.removeEventListener('abort', gone)
          resolve()
        }
        const gone = () => {
          const i = this.#waiting.indexOf(go)
          if (i >= 0) this.#waiting.splice(i, 1)
          reject(new FsError('ECANCELED', 'the request was cancelled'))
        }
        if (signal.aborted) return gone()
        signal.addEventListener('abort', gone, { once: true })
        this.#waiting.push(go)
      })
    }
    let released = false
    return () => {
      if (released) return
      released = true
      const next = this.#waiting.shift()
      if (next) next() // the slot passes straight to the next waiter
      else this.#free++
    }
  }
}

const slots = new Slots(RENDERS_AT_ONCE)
