/**
 * @module gateways/mcp/tools
 * The MCP tools (docs/mcp-gateway.md): ls, cat, write, mkdir, touch, mv, rm, stat,
 * find, share. Each acts through the `ProtocolFs` its request's credential grants
 * (gateways/mcp/grant.ts), on paths canonicalised by the MCP door's rule
 * (core/paths.ts `DOOR_PATH_RULES.mcp`: `..` above the root is refused, never resolved), and reports
 * failures as `isError` results with the HTTP API's messages (gateways/mcp/errors.ts).
 */
import * as z from 'zod'
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js'
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js'
import { FsError } from '../../core/errors.js'
import { makeFolders } from '../../core/make-folders.js'
import { DOOR_PATH_RULES, baseName, isWithin, parentOf } from '../../core/paths.js'
import type { FsEntry } from '../../core/protocol-fs.js'
import type { RequestContext } from '../../core/storage.js'
import { ToolError, refusal, toolFailure } from './errors.js'
import { DeadlineReached, READ, checkCancelled, listAll, removeTree, touchFile, walk, writeFile } from './fs-ops.js'
import { globMatcher } from './glob.js'
import { type Grant, grantOf } from './grant.js'
import { changesNothing } from '../../core/permissions.js'

/** The MCP door's path rule (core/paths.ts). */
const mcpToolPath = DOOR_PATH_RULES.mcp

export type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>

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

const ENTRY = z.object({
  name: z.string(),
  type: z.enum(['file', 'directory']),
  size: z.number().describe('bytes (0 for folders)'),
  mtime: z.string().nullable().describe('last modification, ISO 8601 (null where the storage keeps none)'),
})

export function entryOut(e: FsEntry): z.infer<typeof ENTRY> {
  return { name: e.name, type: e.kind === 'dir' ? 'directory' : 'file', size: e.size, mtime: e.mtimeMs === null ? null : new Date(e.mtimeMs).toISOString() }
}

export const entryLine = (e: FsEntry): string => `${e.kind === 'dir' ? '[DIR]' : '[FILE]'} ${e.name}`

const path = z.string().describe('absolute path inside your root, e.g. "/docs/notes.md" ("/" is the root)')

/** Annotations: every tool acts on the user's own storage only (no open world). */
const READS = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }
const WRITES = (destructive: boolean, idempotent: boolean) => ({ readOnlyHint: false, destructiveHint: destructive, idempotentHint: idempotent, openWorldHint: false })

const READ_ONLY = refusal('FORBIDDEN', 'this login is read-only: it may list and read, not change anything')

export function registerTools(server: McpServer, deps: ToolDeps): void {
  /** Runs a tool with its request's grant; every failure becomes an `isError` result. */
  const run =
    <A>(writes: boolean, fn: (args: A, g: Grant, ctx: RequestContext) => Promise<CallToolResult>) =>
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
  const { limits } = deps

  server.registerTool(
    'ls',
    {
      title: 'List a folder',
      description: 'Lists the entries of a folder, one per line: "[DIR] name" for folders, "[FILE] name" for files.',
      inputSchema: { path: path.default('/') },
      outputSchema: { path: z.string(), entries: z.array(ENTRY), truncated: z.boolean() },
      annotations: READS,
    },
    run(false, async (a: { path: string }, g, ctx) => {
      const p = mcpToolPath(a.path)
      const { entries, cut } = await listAll(g.fs, ctx, p, limits.lsEntries, Date.now() + limits.lsMs).catch((err: unknown) => {
        if (err instanceof DeadlineReached) throw new FsError('ETIMEDOUT', `listing ${p} took longer than ${limits.lsMs / 1000} s: list a smaller folder, or use find`, { path: p })
        throw err
      })
      const lines = entries.map(entryLine)
      if (cut) lines.push(`(only the first ${limits.lsEntries} entries are listed)`)
      return {
        content: [{ type: 'text', text: lines.length > 0 ? lines.join('\n') : '(empty folder)' }],
        structuredContent: { path: p, entries: entries.map(entryOut), truncated: cut },
      }
    }),
  )

  server.registerTool(
    'cat',
    {
      title: 'Read a file',
      description:
        `Reads a file as UTF-8 text, at most ${limits.catBytes} bytes at a time (a note says where to go on). ` +
        'Binary files are refused unless encoding is "base64".',
      inputSchema: {
        path,
        offset: z.number().int().min(0).default(0).describe('first byte to read'),
        length: z.number().int().min(1).max(limits.catBytes).optional().describe(`bytes to read (default and most: ${limits.catBytes})`),
        encoding: z.enum(['text', 'base64']).default('text'),
      },
      outputSchema: {
        path: z.string(),
        size: z.number().describe('the file size'),
        offset: z.number(),
        bytes: z.number().describe('bytes returned'),
        encoding: z.enum(['text', 'base64']),
        truncated: z.boolean().describe('more of the file follows'),
      },
      annotations: READS,
    },
    run(false, async (a: { path: string; offset: number; length?: number | undefined; encoding: 'text' | 'base64' }, g, ctx) => {
      const p = mcpToolPath(a.path)
      const st = await g.fs.stat(ctx, p)
      if (st.kind === 'dir') throw new ToolError('INVALID_INPUT', `${p} is a directory: use ls`)
      const want = a.length ?? limits.catBytes
      const h = await g.fs.open(ctx, p, READ)
      let data: Uint8Array
      try {
        data = await h.read(a.offset, want)
      } finally {
        await h.close()
      }
      let end = a.offset + data.byteLength
      let text: string
      if (a.encoding === 'base64') text = Buffer.from(data).toString('base64')
      else {
        const decoded = decodeText(data, end < st.size)
        if (decoded === null) {
          throw new ToolError('UNSUPPORTED_MEDIA', `${p} is not UTF-8 text (binary content): read it with encoding "base64"`)
        }
        text = decoded
        end = a.offset + Buffer.byteLength(text)
      }
      const truncated = end < st.size
      const content: CallToolResult['content'] = [{ type: 'text', text }]
      if (truncated) content.push({ type: 'text', text: `[bytes ${a.offset} to ${end} of ${st.size}: read on with offset ${end}]` })
      return { content, structuredContent: { path: p, size: st.size, offset: a.offset, bytes: end - a.offset, encoding: a.encoding, truncated } }
    }),
  )

  server.registerTool(
    'write',
    {
      title: 'Write a file',
      description: 'Writes a whole file (replacing it if it exists), atomically: readers see the old or the new file, never a part. Missing folders are made.',
      inputSchema: { path, content: z.string(), encoding: z.enum(['utf8', 'base64']).default('utf8') },
      outputSchema: { path: z.string(), size: z.number() },
      annotations: WRITES(true, true),
    },
    run(true, async (a: { path: string; content: string; encoding: 'utf8' | 'base64' }, g, ctx) => {
      const p = mcpToolPath(a.path)
      if (a.encoding === 'base64' && !/^[A-Za-z0-9+/]*={0,2}$/.test(a.content.replace(/\s+/g, ''))) {
        throw new ToolError('INVALID_INPUT', '"content" is not base64')
      }
      const data = Buffer.from(a.content, a.encoding)
      await writeFile(g.fs, ctx, p, data)
      return { content: [{ type: 'text', text: `wrote ${data.byteLength} bytes to ${p}` }], structuredContent: { path: p, size: data.byteLength } }
    }),
  )

  server.registerTool(
    'mkdir',
    {
      title: 'Make a folder',
      description: 'Makes a folder and its missing parents. A folder that exists already is an error.',
      inputSchema: { path },
      annotations: WRITES(false, false),
    },
    run(true, async (a: { path: string }, g, ctx) => {
      const p = mcpToolPath(a.path)
      if ((await makeFolders(g.fs, ctx, p)).at(-1) !== p) throw new FsError('EEXIST', `${p} already exists`, { path: p })
      return { content: [{ type: 'text', text: `made ${p}` }] }
    }),
  )

  server.registerTool(
    'touch',
    {
      title: 'Create an empty file',
      description: 'Creates an empty file (and missing folders); a file that exists is left as it is.',
      inputSchema: { path },
      annotations: WRITES(false, true),
    },
    run(true, async (a: { path: string }, g, ctx) => {
      const p = mcpToolPath(a.path)
      const made = await touchFile(g.fs, ctx, p)
      return { content: [{ type: 'text', text: made ? `created ${p}` : `${p} exists: left as it is` }] }
    }),
  )

  server.registerTool(
    'mv',
    {
      title: 'Move or rename',
      description: 'Moves or renames a file or folder; missing folders of the target are made. An existing target is an error unless overwrite is true (files only).',
      inputSchema: { from: path, to: path, overwrite: z.boolean().default(false) },
      annotations: WRITES(true, false),
    },
    run(true, async (a: { from: string; to: string; overwrite: boolean }, g, ctx) => {
      const from = mcpToolPath(a.from, 'from')
      const to = mcpToolPath(a.to, 'to')
      if (from === '/') throw new ToolError('FORBIDDEN', 'the root cannot be moved')
      // Checked before the target's folders are made, so that a refused move leaves nothing behind.
      if (to !== from && isWithin(from, to)) throw new FsError('EINVAL', `${from} cannot be moved into itself (${to})`, { path: from })
      await g.fs.stat(ctx, from)
      await makeFolders(g.fs, ctx, parentOf(to))
      checkCancelled(ctx)
      await g.fs.rename(ctx, from, to, { overwrite: a.overwrite })
      return { content: [{ type: 'text', text: `moved ${from} to ${to}` }] }
    }),
  )

  server.registerTool(
    'rm',
    {
      title: 'Remove',
      description: 'Removes a file, or a folder: an empty one, or with everything in it when recursive is true. Stops when cancelled (what was removed stays removed).',
      inputSchema: { path, recursive: z.boolean().default(false) },
      outputSchema: { path: z.string(), removed: z.number().describe('entries removed') },
      annotations: WRITES(true, true),
    },
    run(true, async (a: { path: string; recursive: boolean }, g, ctx) => {
      const p = mcpToolPath(a.path)
      if (p === '/') throw new ToolError('FORBIDDEN', 'the root cannot be removed')
      const e = await g.fs.lstat(ctx, p)
      let removed = 1
      if (e.kind !== 'dir' || e.link) await g.fs.unlink(ctx, p)
      else if (a.recursive) removed = await removeTree(g.fs, ctx, p)
      else {
        await g.fs.rmdir(ctx, p).catch((err: unknown) => {
          if ((err as { code?: unknown }).code === 'ENOTEMPTY') throw new FsError('ENOTEMPTY', `${p} is not empty: pass recursive: true to remove it with its content`, { path: p })
          throw err
        })
      }
      return { content: [{ type: 'text', text: `removed ${p}${removed > 1 ? ` (${removed} entries)` : ''}` }], structuredContent: { path: p, removed } }
    }),
  )

  server.registerTool(
    'stat',
    {
      title: 'Describe a file or folder',
      description: 'Type, size and modification time of a file or folder.',
      inputSchema: { path },
      outputSchema: { path: z.string(), ...ENTRY.shape },
      annotations: READS,
    },
    run(false, async (a: { path: string }, g, ctx) => {
      const p = mcpToolPath(a.path)
      const out = { path: p, ...entryOut({ ...(await g.fs.stat(ctx, p)), name: baseName(p) }) }
      return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out }
    }),
  )

  server.registerTool(
    'find',
    {
      title: 'Find by name',
      description:
        'Finds files and folders under a folder whose name matches a pattern: * (any characters), ? (one), [abc], [a-z], [!abc]. ' +
        `Bounded: at most ${limits.findMatches} matches, ${limits.findVisited} entries looked at, ${limits.findMs / 1000} s; says when it stopped early. Links to folders are not followed.`,
      inputSchema: {
        path: path.default('/'),
        pattern: z.string().min(1).max(1024).describe('a name pattern, e.g. "*.md"'),
        max_depth: z.number().int().min(1).max(64).default(32).describe('folder levels to go down'),
      },
      outputSchema: {
        matches: z.array(ENTRY.extend({ path: z.string() })),
        truncated: z.boolean(),
        reason: z.string().optional().describe('why the search stopped early'),
      },
      annotations: READS,
    },
    run(false, async (a: { path: string; pattern: string; max_depth: number }, g, ctx) => {
      const root = mcpToolPath(a.path)
      let isMatch: (name: string) => boolean
      try {
        isMatch = globMatcher(a.pattern)
      } catch (err) {
        throw new ToolError('INVALID_INPUT', `"pattern" is not a valid name pattern: ${a.pattern} (${(err as Error).message})`)
      }
      const matches: (z.infer<typeof ENTRY> & { path: string })[] = []
      const reason = await walk(g.fs, ctx, root, { maxDepth: a.max_depth, maxVisited: limits.findVisited, deadline: Date.now() + limits.findMs }, (p, e) => {
        if (isMatch(e.name)) matches.push({ path: p, ...entryOut(e) })
        return matches.length < limits.findMatches
      })
      const lines = matches.map((m) => (m.type === 'directory' ? `${m.path}/` : m.path))
      if (lines.length === 0) lines.push('(nothing matches)')
      if (reason !== null) lines.push(`(${reason}: there may be more)`)
      return {
        content: [{ type: 'text', text: lines.join('\n') }],
        structuredContent: { matches, truncated: reason !== null, ...(reason === null ? {} : { reason }) },
      }
    }),
  )

  server.registerTool(
    'share',
    {
      title: 'Make a share link',
      description:
        'Makes a share link to a file or folder: anyone with the link can read it (and upload to it or change it, when allowed), without your credentials. ' +
        'Optional password and expiry.',
      inputSchema: {
        path,
        can_upload: z.boolean().default(false).describe('allow new files and folders'),
        can_write: z.boolean().default(false).describe('allow everything: replace, move, remove'),
        password: z.string().min(1).max(1024).optional(),
        expire: z.string().optional().describe('when the link stops working: an ISO 8601 date and time, e.g. 2030-01-31T12:00:00Z'),
      },
      outputSchema: { id: z.string(), type: z.enum(['file', 'directory']), url: z.string().describe('where the share is listed or read') },
      annotations: WRITES(false, false),
    },
    run(false, async (a: { path: string; can_upload: boolean; can_write: boolean; password?: string | undefined; expire?: string | undefined }, g, ctx) => {
      const p = mcpToolPath(a.path)
      if (g.share === undefined) return refusal('FORBIDDEN', 'this login may not make share links')
      let expire: number | undefined
      if (a.expire !== undefined) {
        expire = Date.parse(a.expire)
        if (Number.isNaN(expire)) throw new ToolError('INVALID_INPUT', `"expire" is not a date and time: ${a.expire}`)
      }
      checkCancelled(ctx)
      const link = await g.share(p, {
        can_read: true,
        can_upload: a.can_upload,
        can_write: a.can_write,
        ...(a.password === undefined ? {} : { password: a.password }),
        ...(expire === undefined ? {} : { expire }),
      })
      const base = deps.publicUrl()
      const url =
        link.kind === 'directory'
          ? `${base}/api/files/ls?path=%2F&share=${link.id}`
          : `${base}/api/files/cat?path=${encodeURIComponent(`/${baseName(p)}`)}&share=${link.id}`
      const type = link.kind
      return { content: [{ type: 'text', text: `shared ${p}: ${url}` }], structuredContent: { id: link.id, type, url } }
    }),
  )
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
