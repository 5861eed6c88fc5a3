/**
 * @module gateways/mcp/errors
 * MCP's own error table: a tool's failure is a result with `isError: true` whose text is
 * `<CODE>: <message>`, a resource read's a JSON-RPC error. Storage errors (`FsError`,
 * core/errors.ts) get their code from `TABLE` here, this door's one table (the words
 * are those of the HTTP API, so a person or a model reading both sees the same
 * names; the HTTP API's table is its own). The door's own refusals (`ToolError`) name
 * their code themselves. Unclassified errors are `INTERNAL: internal error`, their detail
 * kept for the log.
 */
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { type FsErrorCode, isFsError } from '../../core/errors.js'

/** What a tool's result says, by storage error. Typed as a full record so a new code cannot be forgotten. */
const TABLE: Readonly<Record<FsErrorCode, string>> = {
  ENOENT: 'NOT_FOUND',
  EEXIST: 'CONFLICT',
  ENOTDIR: 'INVALID_INPUT',
  EISDIR: 'INVALID_INPUT',
  ENOTEMPTY: 'CONFLICT',
  EACCES: 'FORBIDDEN',
  EINVAL: 'INVALID_INPUT',
  ENOTSUP: 'NOT_SUPPORTED',
  ECANCELED: 'INTERNAL', // never read: the client went away
  ETIMEDOUT: 'BACKEND_TIMEOUT',
  EUNAVAILABLE: 'BACKEND_UNREACHABLE',
  EBUSY: 'RATE_LIMITED',
  EOVERLOAD: 'UNAVAILABLE',
  EAUTH: 'NOT_AUTHENTICATED',
  EFBIG: 'TOO_LARGE',
  ENOSPC: 'INSUFFICIENT_STORAGE',
  EMEDIA: 'UNSUPPORTED_MEDIA',
  EINTEGRITY: 'INVALID_INPUT',
  EIO: 'INTERNAL',
}

/** A refusal of this door's own (a bad argument, a text that is not UTF-8), with the code a tool result shows. */
export class ToolError extends Error {
  override readonly name = 'ToolError'
  constructor(
    readonly code: 'INVALID_INPUT' | 'FORBIDDEN' | 'TOO_LARGE' | 'UNSUPPORTED_MEDIA',
    message: string,
  ) {
    super(message)
  }
}

/**
 * Any thrown value → the code and message a client may see. Errors named by code from
 * the composition root's callbacks (making a share link) carry theirs (`name` and a
 * string `code`, recognised by shape).
 */
export function describeFailure(err: unknown): { readonly code: string; readonly message: string; readonly bug: boolean } {
  if (err instanceof ToolError) return { code: err.code, message: err.message, bug: false }
  if (isFsError(err)) {
    const code = TABLE[err.code]
    // A call the client cancelled is not a failure to report (nobody reads its answer).
    return code === 'INTERNAL' ? { code, message: 'internal error', bug: err.code !== 'ECANCELED' } : { code, message: err.message, bug: false }
  }
  const shaped = err as { name?: unknown; code?: unknown; message?: unknown } | null
  if (err instanceof Error && shaped?.name === 'ApiError' && typeof shaped.code === 'string' && shaped.code !== 'INTERNAL') {
    return { code: shaped.code, message: err.message, bug: false }
  }
  return { code: 'INTERNAL', message: 'internal error', bug: true }
}

export interface ToolFailure {
  readonly result: CallToolResult
  /** Set when the error was not one a user caused (a bug or a backend failure): log it. */
  readonly bug?: unknown
}

export function toolFailure(err: unknown): ToolFailure {
  const f = describeFailure(err)
  const result: CallToolResult = { isError: true, content: [{ type: 'text', text: `${f.code}: ${f.message}` }] }
  return f.bug ? { result, bug: err } : { result }
}

/** A resource read's failure as a JSON-RPC error code: not found, a server-side failure, or a bad request. */
export function resourceErrorCode(code: string, notFound: number): number {
  if (code === 'NOT_FOUND') return notFound
  return code === 'INTERNAL' || code === 'UNAVAILABLE' || code.startsWith('BACKEND_') ? ErrorCode.InternalError : ErrorCode.InvalidParams
}

/** A refusal of the gateway's own (not an error of the storage), in the same shape. */
export function refusal(code: string, message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: `${code}: ${message}` }] }
}
