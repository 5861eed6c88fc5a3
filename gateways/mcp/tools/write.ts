/**
 * @module gateways/mcp/tools/write
 * The tools that change files: write, mkdir, touch, mv, rm (refused to read-only logins).
 */
import * as z from 'zod'
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { FsError } from '../../../core/errors.js'
import { makeFolders } from '../../../core/make-folders.js'
import { isWithin, parentOf } from '../../../core/paths.js'
import { ToolError } from '../errors.js'
import { checkCancelled, touchFile, writeFile } from '../fs-ops.js'
import { type Run, type ToolDeps, WRITES, mcpToolPath, path } from './common.js'

export function registerWriteTools(server: McpServer, _deps: ToolDeps, run: Run): void {
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
      await g.fs.makeFolders(ctx, p).catch(async (err: unknown) => {
        if ((err as { code?: unknown }).code !== 'EEXIST') throw err
        if ((await g.fs.stat(ctx, p)).kind !== 'dir') throw new FsError('ENOTDIR', `${p} is a file, not a folder`, { path: p })
        throw new FsError('EEXIST', `${p} already exists`, { path: p })
      })
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
      outputSchema: { path: z.string(), type: z.enum(['file', 'directory']).describe('what was removed (a directory: with everything in it)') },
      annotations: WRITES(true, true),
    },
    run(true, async (a: { path: string; recursive: boolean }, g, ctx) => {
      const p = mcpToolPath(a.path)
      if (p === '/') throw new ToolError('FORBIDDEN', 'the root cannot be removed')
      const e = await g.fs.lstat(ctx, p)
      const folder = e.kind === 'dir' && !e.link
      // A folder's tree goes in one worker task (the driver's bulk delete where it has one).
      if (!folder) await g.fs.unlink(ctx, p)
      else if (a.recursive) await g.fs.removeTree(ctx, p)
      else {
        await g.fs.rmdir(ctx, p).catch((err: unknown) => {
          if ((err as { code?: unknown }).code === 'ENOTEMPTY') throw new FsError('ENOTEMPTY', `${p} is not empty: pass recursive: true to remove it with its content`, { path: p })
          throw err
        })
      }
      const text = `removed ${p}${folder && a.recursive ? ' and everything in it' : ''}`
      return { content: [{ type: 'text', text }], structuredContent: { path: p, type: folder ? 'directory' : 'file' } }
    }),
  )
}
