/**
 * @module gateways/s3/conditions
 * Conditional requests as S3 evaluates them (RFC 9110 section 13.2.2's precedence):
 * If-Match, then If-Unmodified-Since only without If-Match; If-None-Match, then
 * If-Modified-Since only without If-None-Match. Times compare at whole seconds (what
 * Last-Modified carries); an unparsable date is ignored.
 */
import type { HttpRequest } from '../../core/http.js'
import { S3Error } from './errors.js'

export interface Validators {
  /** Unquoted. */
  readonly etag: string
  readonly mtimeMs: number | null
}

/** Whether a list of ETags (`"a", "b"`, `*`, weak ones included) names `etag`. */
export function etagMatches(header: string, etag: string): boolean {
  return header.split(',').some((t) => {
    const s = t.trim().replace(/^W\//, '')
    return s === '*' || s === `"${etag}"` || s === etag
  })
}

const seconds = (ms: number | null): number => Math.floor((ms ?? 0) / 1000)
const dateOf = (h: string | undefined): number | null => {
  if (h === undefined) return null
  const t = Date.parse(h)
  return Number.isNaN(t) ? null : Math.floor(t / 1000)
}

export const preconditionFailed = (condition: string): S3Error =>
  new S3Error('PreconditionFailed', 'At least one of the pre-conditions you specified did not hold', 412, { Condition: condition })

/**
 * For GetObject and HeadObject: 'not-modified' (304), or throws PreconditionFailed
 * (412); null: serve. `prefix` reads the copy-source variants (`x-amz-copy-source-`),
 * where a failed If-None-Match or If-Modified-Since is 412 too.
 */
export function evaluate(req: HttpRequest, v: Validators, prefix = ''): 'not-modified' | null {
  const h = (name: string) => req.header(prefix + name)
  const ifMatch = h('if-match')
  if (ifMatch !== undefined) {
    if (!etagMatches(ifMatch, v.etag)) throw preconditionFailed(`${prefix}If-Match`)
  } else {
    const since = dateOf(h('if-unmodified-since'))
    if (since !== null && seconds(v.mtimeMs) > since) throw preconditionFailed(`${prefix}If-Unmodified-Since`)
  }
  let notModified = false
  const ifNone = h('if-none-match')
  if (ifNone !== undefined) notModified = etagMatches(ifNone, v.etag)
  else {
    const since = dateOf(h('if-modified-since'))
    notModified = since !== null && seconds(v.mtimeMs) <= since
  }
  if (!notModified) return null
  if (prefix !== '') throw preconditionFailed(`${prefix}${ifNone !== undefined ? 'If-None-Match' : 'If-Modified-Since'}`)
  return 'not-modified'
}
