/**
 * @module front/http/status
 * The contract's error codes → HTTP statuses (docs/api.md, "Conventions and errors"), and the
 * JSON error envelope. The one place the HTTP API turns errors into responses.
 */
import { STATUS_CODES } from 'node:http'
import { type ApiCode, type ApiError, toApiError } from '../../core/api-error.js'
import type { HttpReply } from '../../core/http.js'

export const HTTP_STATUS: Readonly<Record<ApiCode, number>> = {
  INVALID_INPUT: 400,
  NOT_AUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  GONE: 410,
  TOO_LARGE: 413,
  UNSUPPORTED_MEDIA: 415,
  RANGE_NOT_SATISFIABLE: 416,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  NOT_SUPPORTED: 501,
  BACKEND_UNREACHABLE: 502,
  UNAVAILABLE: 503,
  BACKEND_TIMEOUT: 504,
  INSUFFICIENT_STORAGE: 507,
}

export const JSON_TYPE = 'application/json; charset=utf-8'

export function jsonReply(status: number, value: unknown, headers: Record<string, string> = {}): HttpReply {
  return { status, headers: { 'content-type': JSON_TYPE, 'cache-control': 'no-store', ...headers }, body: JSON.stringify(value) + '\n' }
}

export function okReply(extra: Record<string, unknown> = {}): HttpReply {
  return jsonReply(200, { status: 'ok', ...extra })
}

/** Any error → the contract's envelope. INTERNAL never carries the detail. */
export function errorReply(err: unknown): { reply: HttpReply; error: ApiError } {
  const error = toApiError(err)
  const headers: Record<string, string> = {}
  if (error.code === 'UNAVAILABLE') headers['retry-after'] = '5'
  if (error.code === 'NOT_AUTHENTICATED') headers['www-authenticate'] = 'Bearer realm="filegate"'
  return { reply: jsonReply(HTTP_STATUS[error.code], { status: 'error', code: error.code, message: error.message }, headers), error }
}

/** "200 OK": the status line uWS wants. */
export function statusLine(status: number): string {
  return `${status} ${STATUS_CODES[status] ?? 'Unknown'}`
}
