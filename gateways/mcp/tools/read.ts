/**
 * @module gateways/mcp/tools/read
 * The tools that read: ls, cat, stat, find.
 */
import * as z from 'zod'
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { FsError } from '../../../core/errors.js'
import { baseName } from '../../../core/paths.js'
import { DeadlineReached, READ, listAll, walk } from '../fs-ops.js'
import { ToolError } from '../errors.js'
import { globMatcher } from '../glob.js'
import { ENTRY, READS, type Run, type ToolDeps, decodeText, entryLine, entryOut, mcpToolPath, path } from './common.js'

export function registerReadTools(server: McpServer, deps: ToolDeps, run: Run): void {
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
}
