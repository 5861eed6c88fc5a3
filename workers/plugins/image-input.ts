/**
 * @module workers/plugins/image-input
 * What the image plugins (plg_image_ascii, plg_image_thumbnail) share: the four accepted
 * formats' signatures, a file collected up to a size and refused as soon as its first
 * bytes show it is not an image, and sharp loaded on first use (a worker of a server that
 * never renders an image never loads libvips).
 */
import type { Sharp, SharpOptions } from 'sharp'
import { FsError } from '../../core/errors.js'

/** Signatures of the accepted formats, checked on the first 12 bytes. */
export function sniff(head: Uint8Array): 'png' | 'jpeg' | 'gif' | 'webp' | null {
  const at = (i: number, s: string) => [...s].every((c, k) => head[i + k] === c.charCodeAt(0))
  if (head[0] === 0x89 && at(1, 'PNG\r\n\x1a\n')) return 'png'
  if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'jpeg'
  if (at(0, 'GIF87a') || at(0, 'GIF89a')) return 'gif'
  if (at(0, 'RIFF') && at(8, 'WEBP')) return 'webp'
  return null
}

const SNIFF_BYTES = 12

export const notImage = (name: string, why = 'is not a PNG, JPEG, GIF or WebP image') => new FsError('EMEDIA', `${name} ${why}`)

/**
 * The whole file, refused (`tooBig`) as soon as it outgrows `max`, or (EMEDIA) as soon as
 * its first bytes show it is not an image.
 */
export async function collectImage(body: AsyncIterable<Uint8Array>, name: string, max: number, tooBig: (is: string) => FsError): Promise<Buffer> {
  const chunks: Uint8Array[] = []
  let total = 0
  let sniffed = false
  for await (const chunk of body) {
    chunks.push(chunk)
    total += chunk.byteLength
    if (total > max) throw tooBig('over that size')
    if (!sniffed && total >= SNIFF_BYTES) {
      if (sniff(Buffer.concat(chunks, total).subarray(0, SNIFF_BYTES)) === null) throw notImage(name)
      sniffed = true
    }
  }
  if (total === 0) throw notImage(name, 'is empty, not an image')
  const all = Buffer.concat(chunks, total)
  if (!sniffed && sniff(all) === null) throw notImage(name)
  return all
}

export type SharpFactory = (input: Buffer, options?: SharpOptions) => Sharp
let sharpLib: Promise<SharpFactory> | undefined

export function loadSharp(): Promise<SharpFactory> {
  sharpLib ??= import('sharp').then((m) => {
    m.default.cache(false) // each image is decoded once: libvips' operation cache would only hold memory
    return m.default as SharpFactory
  })
  return sharpLib
}
