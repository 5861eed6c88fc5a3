/**
 * @module core/range
 * HTTP byte ranges (RFC 9110 section 14): parsed on the main thread, resolved
 * against the file's size in the worker, which knows it.
 */
import type { ByteRange } from './driver.js'
import type { RangeSpec } from './messages.js'

const ONE = /^bytes=(\d*)-(\d*)$/

/**
 * Parses a Range header. Absent → null. Several ranges are not served (the whole file
 * is, as RFC 9110 allows): null. Anything else that is not one valid byte range →
 * 'invalid' (the contract answers 416).
 */
export function parseRange(header: string | undefined): RangeSpec | null | 'invalid' {
  if (header === undefined || header === '') return null
  const h = header.trim()
  if (/^bytes=[^,]*,/.test(h)) return null
  const m = ONE.exec(h)
  if (!m) return 'invalid'
  const [, a = '', b = ''] = m
  if (a === '' && b === '') return 'invalid'
  if (a === '') return { suffix: Number(b) }
  const start = Number(a)
  if (!Number.isSafeInteger(start)) return 'invalid'
  if (b === '') return { start }
  const end = Number(b)
  if (!Number.isSafeInteger(end) || end < start) return 'invalid'
  return { start, end }
}

/** The inclusive range to send, or null when it does not overlap a file of `size` bytes. */
export function resolveRange(spec: RangeSpec, size: number): Required<ByteRange> | null {
  if ('suffix' in spec) {
    if (spec.suffix === 0 || size === 0) return null
    return { start: Math.max(0, size - spec.suffix), end: size - 1 }
  }
  if (spec.start >= size) return null
  return { start: spec.start, end: Math.min(spec.end ?? size - 1, size - 1) }
}
