/**
 * @module gateways/mcp/errors
 * A tool's failure as MCP reports it: a result with `isError: true` whose text is the
 * HTTP API's code and message for the same error (core/api-error.ts, `toApiError`:
 * the one table from storage errors to what clients see). Unclassified errors are
 * `internal error`, their detail kept for the log.
 */
import { toApiError } from '../../core/api-error.js'
import { isFsError } from '../../core/errors.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'

export interface ToolFailure {
  readonly result: CallToolResult
  /** Set when the error was not one a user caused (a bug or a backend failure): log it. */
  readonly bug?: unknown
}

export function toolFailure(err: unknown): ToolFailure {
  const api = toApiError(err)
  const result: CallToolResult = { isError: true, content: [{ type: 'text', text: `${api.code}: ${api.message}` }] }
  // A call the client cancelled is not a failure to report (nobody reads its answer).
  const cancelled = isFsError(err) && err.code === 'ECANCELED'
  return api.code === 'INTERNAL' && !cancelled ? { result, bug: err } : { result }
}

/** A refusal of the gateway's own (not an error of the storage), in the same shape. */
export function refusal(code: string, message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: `${code}: ${message}` }] }
}
