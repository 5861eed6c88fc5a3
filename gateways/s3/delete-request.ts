/**
 * @module gateways/s3/delete-request
 * The body of a DeleteObjects request, read in one linear pass: `<Delete>` with
 * `<Quiet>` and up to 1,000 `<Object>`s, each with a `<Key>` (and a `<VersionId>`,
 * ETag, ... that are read past). A general XML parser took seconds of the main thread
 * on a few megabytes of `&amp;` (superlinear on long text and entity references); this
 * reader costs one scan of a body that is bounded before it is read, so no request can
 * hold the thread. It takes what S3 takes: a prolog, comments, namespaces (any prefix),
 * attributes, CDATA, the five predefined entities and character references; anything
 * else (a DTD, another entity, a tag out of place) is MalformedXML.
 */
import { S3Error } from './errors.js'
import { malformed } from './xml.js'

/** S3's largest DeleteObjects. */
export const MAX_DELETE_KEYS = 1000
/**
 * The largest body: 1,000 keys of 1 KiB, each with room to be escaped twice over and
 * for its markup. Over it: EntityTooLarge, before the body is read (announced) or as
 * soon as it passes the bound (streamed).
 */
export const MAX_DELETE_BODY = MAX_DELETE_KEYS * 2048 + 64 * 1024

export const bodyTooLarge = (): S3Error =>
  new S3Error('EntityTooLarge', `Your proposed upload exceeds the maximum allowed size: a DeleteObjects body is at most ${MAX_DELETE_BODY} bytes.`, 400, {
    MaxSizeAllowed: String(MAX_DELETE_BODY),
  })

export interface DeleteRequest {
  readonly keys: readonly string[]
  readonly quiet: boolean
}

/** A start tag, end tag or empty-element tag; the name with any namespace prefix. */
const TAG = /<(\/?)([A-Za-z_][\w.-]*(?::[A-Za-z_][\w.-]*)?)((?:\s+[A-Za-z_][\w.:-]*\s*=\s*(?:"[^"<]*"|'[^'<]*'))*)\s*(\/?)>/y
const NAMED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" }
/** The longest reference between `&` and `;`: `#x10FFFF` or `#1114111`. */
const MAX_REF = 8

/** One reference's text (between `&` and `;`). */
function reference(ref: string): string {
  const named = NAMED[ref]
  if (named !== undefined) return named
  const hex = ref.startsWith('#x')
  const digits = ref.slice(hex ? 2 : 1)
  if (!ref.startsWith('#') || !(hex ? /^[0-9a-fA-F]{1,6}$/ : /^[0-9]{1,7}$/).test(digits)) throw malformed()
  const cp = parseInt(digits, hex ? 16 : 10)
  // XML's Char production: no NUL or other C0 control but tab, newline and return; no surrogates.
  const ok = cp === 0x9 || cp === 0xa || cp === 0xd || (cp >= 0x20 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff)
  if (!ok) throw malformed()
  return String.fromCodePoint(cp)
}

/** Text with its references replaced: one scan from `&` to `&`, pieces joined once. */
function decodeText(raw: string): string {
  let amp = raw.indexOf('&')
  if (amp < 0) return raw
  const parts: string[] = []
  let from = 0
  while (amp >= 0) {
    if (amp > from) parts.push(raw.slice(from, amp))
    const semi = raw.indexOf(';', amp + 1)
    if (semi < 0 || semi - amp - 1 > MAX_REF) throw malformed()
    parts.push(reference(raw.slice(amp + 1, semi)))
    from = semi + 1
    amp = raw.indexOf('&', from)
  }
  if (from < raw.length) parts.push(raw.slice(from))
  return parts.join('')
}

const localName = (name: string): string => name.slice(name.indexOf(':') + 1)

/**
 * @throws S3Error MalformedXML (not a Delete document, no Object, over 1,000 of them)
 */
export function parseDeleteRequest(text: string): DeleteRequest {
  if (/<!DOCTYPE|<!ENTITY/i.test(text)) throw malformed()
  const keys: string[] = []
  let quiet = false
  // The open elements' local names, and the text of the innermost one.
  const stack: string[] = []
  let textOf = ''
  let key: string | null = null
  let sawRoot = false
  let i = 0
  const n = text.length
  while (i < n) {
    const lt = text.indexOf('<', i)
    const chunk = text.slice(i, lt < 0 ? n : lt)
    if (chunk !== '') {
      if (stack.length === 0) {
        if (chunk.trim() !== '') throw malformed() // text outside the root
      } else textOf += decodeText(chunk)
    }
    if (lt < 0) break
    if (text.startsWith('<!--', lt)) {
      const end = text.indexOf('-->', lt + 4)
      if (end < 0) throw malformed()
      i = end + 3
      continue
    }
    if (text.startsWith('<![CDATA[', lt)) {
      const end = text.indexOf(']]>', lt + 9)
      if (end < 0 || stack.length === 0) throw malformed()
      textOf += text.slice(lt + 9, end)
      i = end + 3
      continue
    }
    if (text.startsWith('<?', lt)) {
      // The XML declaration (or a processing instruction) is allowed before the root only.
      const end = text.indexOf('?>', lt + 2)
      if (end < 0 || sawRoot) throw malformed()
      i = end + 2
      continue
    }
    TAG.lastIndex = lt
    const m = TAG.exec(text)
    if (!m) throw malformed()
    i = TAG.lastIndex
    const closing = m[1] === '/'
    const empty = m[4] === '/'
    if (closing && (empty || m[3] !== '')) throw malformed()
    const name = localName(m[2]!)
    if (!closing) {
      const depth = stack.length
      const parent = stack[depth - 1]
      // Delete holds Quiet and Objects; an Object holds its Key and what S3 lets it name (VersionId, ETag, ...).
      const fits = depth === 0 ? name === 'Delete' && !sawRoot : depth === 1 ? name === 'Object' || name === 'Quiet' : depth === 2 ? parent === 'Object' : false
      if (!fits) throw malformed()
      sawRoot = true
      if (depth === 1 && name === 'Object') {
        if (keys.length === MAX_DELETE_KEYS) throw malformed()
        key = null
      }
      if (empty) {
        if (depth === 1 && name === 'Object') throw malformed() // an Object without a Key
        if (depth === 2 && name === 'Key') key = ''
        continue
      }
      stack.push(name)
      textOf = ''
      continue
    }
    // An end tag: it must close the innermost open element.
    if (stack.at(-1) !== name) throw malformed()
    stack.pop()
    const depth = stack.length
    if (depth === 2 && name === 'Key') {
      if (key !== null) throw malformed() // two Keys in one Object
      key = textOf
    } else if (depth === 1 && name === 'Quiet') quiet = textOf.trim().toLowerCase() === 'true'
    else if (depth === 1 && name === 'Object') {
      if (key === null) throw malformed()
      keys.push(key)
    }
    textOf = ''
  }
  if (!sawRoot || stack.length !== 0 || keys.length === 0) throw malformed()
  return { keys, quiet }
}
