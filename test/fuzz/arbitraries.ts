/**
 * Shared fast-check arbitraries for every door: path segments (plain, unicode in NFC
 * and NFD, right-to-left, astral, the names planted in the fuzz world's root), `..`
 * and `.` in every encoding (percent, double percent, overlong UTF-8, fullwidth and
 * look-alike dots), separators (`/`, `\`, encoded), NUL and control characters, huge
 * values (64 KiB names, deep paths); header values, bodies and credentials (wrong,
 * truncated, huge).
 */
import fc from 'fast-check'

/** What is planted in the world's root (test/fuzz/world.ts), and what lies beyond it. */
export const PLANTED = ['out-abs', 'out-rel', 'out-file', 'out-file-rel', 'out-top', 'dangling', 'loop-a', 'loop-b', 'in-dir', 'in-file', 'swap', 'inner', 'file.txt', 'secret.txt', 'sub', 'deep.txt', 'rootside', 'root', 'data']

/** `..` and `.` as a decoder at the wrong depth, or a normaliser, might see them. */
export const TRAVERSALS = [
  '..', '.', '...', '%2e%2e', '%2E%2E', '%2e.', '.%2e', '%2e', '%252e%252e', '%25252e%25252e', '%c0%ae%c0%ae', '%e0%80%ae%e0%80%ae', '%c0%2e%c0%2e',
  '\uff0e\uff0e', '\u2024\u2024', '\u2025', '.\u200b.', '..\u0000', '..;', '..%00', '..%2f', '..%5c', '..\\', '.\\.', '..\u2215', '..\u2044',
  '\u002e\u002e', '..%ef%bc%8f', '..\uff0f', '..\uff3c', '~', '~root', '$HOME', '%USERPROFILE%', '/dev/null', 'C:', 'C:\\Windows', '\\\\?\\C:\\',
]

/** Separators between segments, including ones that should never act as one. */
export const SEPARATORS = ['/', '/', '/', '//', '/./', '\\', '%2f', '%2F', '%252f', '%5c', '\uff0f', '\u2215', '%c0%af', '/\u0000/']

const CONTROL = fc.constantFrom('\u0000', '\u0001', '\t', '\n', '\r', '\u001b', '\u007f', '\u0085', '\u2028', '\u202e', '\ufeff', '\ud800', '\udfff')

/** Unicode worth a name: composed and decomposed, right-to-left, astral, look-alikes. */
const UNICODE = fc.constantFrom('é', 'e\u0301', 'Å', 'A\u030a', 'ﬁ', 'שלום', 'مرحبا', '\u202eexe.txt', '𝔘𝔫𝔦', '😀', '👩‍👩‍👧', '\u0130', 'ß', 'İ', 'Σ', '\u3000', '…', '\u00a0')

export const segment: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,10}$/) },
  { weight: 6, arbitrary: fc.constantFrom(...PLANTED) },
  { weight: 5, arbitrary: fc.constantFrom(...TRAVERSALS) },
  { weight: 2, arbitrary: UNICODE },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 8 }) },
  { weight: 1, arbitrary: fc.tuple(fc.stringMatching(/^[a-z]{1,4}$/), CONTROL, fc.stringMatching(/^[a-z]{0,4}$/)).map(([a, c, b]) => a + c + b) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', ' x ', 'x.', '.hidden', '.filegate-0.part', 'CON', 'aux.txt', '*', '?', '[a]', '%', '%%', '%zz', '%u002e', '&', '#', '=', '+', ';') },
)

/** A huge value: a 64 KiB name, a path 2,000 folders deep, or 5,000 `../`. */
export const huge: fc.Arbitrary<string> = fc.constantFrom('a'.repeat(65536), 'd/'.repeat(2000) + 'f', '../'.repeat(5000) + 'x', '%2e%2e/'.repeat(3000), '\u00e9'.repeat(3000))

/** A path as a hostile client might write it: segments and separators, optionally leading and trailing ones; rarely huge. */
export const hostilePath: fc.Arbitrary<string> = fc.oneof(
  { weight: 40, arbitrary: fc.tuple(fc.constantFrom('/', '/', '', '\\', '//', './'), fc.array(fc.tuple(segment, fc.constantFrom(...SEPARATORS)), { minLength: 0, maxLength: 5 }), segment, fc.constantFrom('', '', '/', '\\', '%2f')).map(([lead, parts, last, trail]) => lead + parts.map(([s, sep]) => s + sep).join('') + last + trail) },
  { weight: 1, arbitrary: huge },
)

/** A path inside the world that normalises to something real (for targets and sources that should work). */
export const plainPath: fc.Arbitrary<string> = fc
  .tuple(fc.array(fc.oneof(fc.stringMatching(/^[a-z]{1,6}$/), fc.constantFrom('inner', 'in-dir', 'swap', 'out-abs', 'out-rel', 'out-top', 'out-file', 'rootside', 'sub', 'secret.txt', 'deep.txt', 'file.txt', '..')), { minLength: 1, maxLength: 3 }), fc.constantFrom('', '', '/'))
  .map(([p, trail]) => `/${p.join('/')}${trail}`)

/** Well-formed paths through the planted links to what lies outside the root (which must stay out of reach). */
export const escapePath: fc.Arbitrary<string> = fc
  .tuple(
    fc.constantFrom('/out-abs', '/out-rel', '/out-top/rootside', '/swap', '/in-dir/../out-abs', '/inner/../out-rel', '/out-top/root/out-abs', '/loop-a', '/dangling'),
    fc.constantFrom('', '/', '/secret.txt', '/sub', '/sub/', '/sub/deep.txt', '/new.txt', '/sub/new', '/missing/new.txt'),
  )
  .map(([a, b]) => a + b)

/** Any of them: hostile paths, well-formed ones, and ones through the planted links often enough to reach what lies behind them. */
export const path: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: hostilePath },
  { weight: 1, arbitrary: plainPath },
  { weight: 2, arbitrary: fc.oneof(escapePath, fc.constantFrom('/out-file', '/out-file-rel', '/in-file', '/in-dir/file.txt')) },
)

/** How a path rides in a URL: encoded as a value (decoded once by the server), or written as is (percent sequences left for the server). */
export type Encoding = 'component' | 'raw'
export const encoding: fc.Arbitrary<Encoding> = fc.constantFrom('component', 'raw')

/** `s` in a query string or URL path: `raw` escapes only what an HTTP request line cannot carry. */
export function inUrl(s: string, how: Encoding): string {
  const wellFormed = s.toWellFormed() // a lone surrogate has no UTF-8: U+FFFD, as any client would send
  if (how === 'component') return encodeURIComponent(wellFormed)
  return Array.from(wellFormed)
    .map((c) => (/^[\x21-\x7e]$/.test(c) && c !== '#' && c !== '&' ? c : encodeURIComponent(c)))
    .join('')
}

/** A header value: plausible, garbled, huge; only what an HTTP client can put on the wire (Latin-1, no CR/LF). */
export const headerValue: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.stringMatching(/^[\x20-\x7e]{0,40}$/) },
  { weight: 4, arbitrary: fc.constantFrom('bytes=0-', 'bytes=-1', 'bytes=5-2', 'bytes=0-0,1-1', 'bytes=99999999999999999999-', 'bytes=-0', 'items=0-1', '*', '"x"', 'W/"x"', 'Thu, 01 Jan 1970 00:00:00 GMT', 'not a date', '-1', '0', '1e9', 'NaN', '18446744073709551616', 'chunked', 'gzip') },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 40 }).map((n) => 'x'.repeat(n * 1000)) },
  { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom(...'\x80\xa0\xe9\xff\x00'.split('')), maxLength: 5 }).map((s) => s.replace(/\x00/g, '')) },
)

/** A credential that must be refused: empty, garbled, truncated or extended from a real one, huge, of another kind. */
export function wrongCredential(real: string): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constant(''),
    fc.integer({ min: 0, max: Math.max(0, real.length - 1) }).map((n) => real.slice(0, n)),
    fc.tuple(fc.nat(real.length - 1), fc.stringMatching(/^[A-Za-z0-9_.\-+/=]$/)).filter(([i, c]) => real[i] !== c).map(([i, c]) => real.slice(0, i) + c + real.slice(i + 1)),
    fc.stringMatching(/^[A-Za-z0-9_.\-+/=]{1,3}$/).map((s) => real + s),
    fc.stringMatching(/^[\x21-\x7e]{0,80}$/),
    fc.constantFrom('null', 'undefined', '[object Object]', 'fgk_', 'fgs_', 'FG', 'x'.repeat(70000), '%00', '../../etc/passwd', "' OR 1=1 --"),
  )
}

/** A body: empty, bytes, text, JSON of any shape. */
export const body: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc.constant(new Uint8Array(0)),
  fc.uint8Array({ maxLength: 64 }),
  fc.string({ maxLength: 64 }).map((s) => new TextEncoder().encode(s)),
  fc.json({ maxDepth: 3 }).map((s) => new TextEncoder().encode(s)),
)

/** A JSON object mixing known keys (with values of every type) and unknown ones. */
export function jsonObject(known: readonly string[], value: fc.Arbitrary<unknown> = anyValue): fc.Arbitrary<Record<string, unknown>> {
  return fc.dictionary(fc.oneof(fc.constantFrom(...known), fc.string({ maxLength: 10 }), fc.constantFrom('__proto__', 'constructor', 'prototype')), value, { maxKeys: 6 })
}

export const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: path },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  { weight: 1, arbitrary: fc.constantFrom(true, false, null, 0, -1, 1e308, Number.MAX_SAFE_INTEGER + 2, '', 'x'.repeat(70000), [], {}, ['/'], 'disk', 'tmp', 'local') },
)
