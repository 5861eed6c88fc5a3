/**
 * @module gateways/mcp/tools/common
 * What every MCP tool is made with: the limits, the shared output shapes, the
 * annotations, and `toolRunner` (a tool runs with its request's grant; every failure
 * becomes an `isError` result).
 */
import * as z from 'zod'
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js'
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js'
import { DOOR_PATH_RULES } from '../../../core/paths.js'
import { changesNothing } from '../../../core/permissions.js'
import type { FsEntry, RequestContext } from '../../../core/view.js'
import { refusal, toolFailure } from '../errors.js'
import { type Grant, grantOf } from '../grant.js'

export type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>

/** The MCP door's path rule (core/paths.ts). */
export const mcpToolPath = DOOR_PATH_RULES.mcp

export interface ToolLimits {
  /** Most bytes `cat` returns at once (default 1 MiB). */
  readonly catBytes: number
  /** Most entries `ls` lists (default 10,000), and the time it may take (default 20 s). */
  readonly lsEntries: number
  readonly lsMs: number
  /** `find`: entries looked at, matches returned, time spent. */
  readonly findVisited: number
  readonly findMatches: number
  readonly findMs: number
}

export const DEFAULT_LIMITS: ToolLimits = { catBytes: 1024 * 1024, lsEntries: 10_000, lsMs: 20_000, findVisited: 100_000, findMatches: 1000, findMs: 20_000 }

export interface ToolDeps {
  readonly limits: ToolLimits
  /** The HTTP API's address as clients reach it (share links). */
  readonly publicUrl: () => string
  readonly log: (level: 'warn' | 'error', msg: string, fields: Record<string, unknown>) => void
  /** Tool calls under way, all sessions together: a shutdown lets them finish first. */
  readonly calls?: { running: number }
}

export const ENTRY = z.object({
  name: z.string(),
  type: z.enum(['file', 'directory']),
  size: z.number().describe('bytes (0 for folders)'),
  mtime: z.string().nullable().describe('last modification, ISO 8601 (null where the storage keeps none)'),
})

export function entryOut(e: FsEntry): z.infer<typeof ENTRY> {
  return { name: e.name, type: e.kind === 'dir' ? 'directory' : 'file', size: e.size, mtime: e.mtimeMs === null ? null : new Date(e.mtimeMs).toISOString() }
}

export const entryLine = (e: FsEntry): string => `${e.kind === 'dir' ? '[DIR]' : '[FILE]'} ${e.name}`

export const path = z.string().describe('absolute path inside your root, e.g. "/docs/notes.md" ("/" is the root)')

/** Annotations: every tool acts on the user's own storage only (no open world). */
export const READS = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }
export const WRITES = (destructive: boolean, idempotent: boolean) => ({ readOnlyHint: false, destructiveHint: destructive, idempotentHint: idempotent, openWorldHint: false })

const READ_ONLY = refusal('FORBIDDEN', 'this login is read-only: it may list and read, not change anything')

/** A tool's handler: its arguments, the request's grant, and the context for calls on the view. */
export type ToolFn<A> = (args: A, g: Grant, ctx: RequestContext) => Promise<CallToolResult>
/** Wraps a handler: `writes` ones are refused to read-only logins. */
export type Run = <A>(writes: boolean, fn: ToolFn<A>) => (args: A, extra: Extra) => Promise<CallToolResult>

/** Runs a tool with its request's grant; every failure becomes an `isError` result. */
export function toolRunner(deps: ToolDeps): Run {
  return <A>(writes: boolean, fn: ToolFn<A>) =>
    async (args: A, extra: Extra): Promise<CallToolResult> => {
    const g = grantOf(extra.authInfo)
    // A login that may change nothing is told so plainly; other refusals come from the view (EACCES, naming the bit).
    if (writes && changesNothing(g.fs.permissions)) return READ_ONLY
    const ctx: RequestContext = { requestId: g.requestId, signal: extra.signal }
    if (deps.calls) deps.calls.running++
    try {
      return await fn(args, g, ctx)
    } catch (err) {
      const { result, bug } = toolFailure(err)
      if (bug !== undefined) deps.log('error', 'mcp tool failed', { requestId: g.requestId, err: bug instanceof Error ? (bug.stack ?? bug.message) : String(bug) })
      return result
    } finally {
      if (deps.calls) deps.calls.running--
    }
  }
}

/**
 * UTF-8 text, or null for binary content (a NUL byte, or bytes that are not UTF-8).
 * With `more` (the file goes on), a character cut at the end is left for the next read.
 */
export function decodeText(data: Uint8Array, more: boolean): string | null {
  if (data.includes(0)) return null
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(data, { stream: more })
  } catch {
    return null
  }
}
