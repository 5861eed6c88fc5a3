/**
 * @module front/http/page-file
 * The reply for one of filegate's own page files (the admin console's, the web file
 * manager's): read-only (GET and HEAD), revalidated on every load (a new version of
 * filegate changes them), never sniffed, framed or sent a referrer, under the page's CSP.
 */
import { ApiError } from '../../core/api-error.js'
import type { HttpReply, HttpRequest } from '../../core/http.js'

const TYPES: Readonly<Record<string, string>> = {
  html: 'text/html; charset=utf-8',
  css: 'text/css; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
}

/** Page files are only read: refuse any other method before the file is looked for. */
export function refuseWrites(req: HttpRequest): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') throw new ApiError('INVALID_INPUT', `${req.method} is not supported on ${req.path}; use GET`)
}

export function pageFileReply(req: HttpRequest, file: string, text: string, csp: string): HttpReply {
  refuseWrites(req)
  const headers = {
    'content-type': TYPES[file.split('.').pop()!]!,
    'cache-control': 'no-cache',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'content-security-policy': csp,
  }
  return req.method === 'HEAD' ? { status: 200, headers, length: Buffer.byteLength(text) } : { status: 200, headers, body: text }
}
