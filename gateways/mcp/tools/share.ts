/**
 * @module gateways/mcp/tools/share
 * The share tool: a share link to a file or folder, for logins that may make them.
 */
import * as z from 'zod'
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { baseName } from '../../../core/paths.js'
import { ToolError, refusal } from '../errors.js'
import { checkCancelled } from '../fs-ops.js'
import { type Run, type ToolDeps, WRITES, mcpToolPath, path } from './common.js'

export function registerShareTool(server: McpServer, deps: ToolDeps, run: Run): void {
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
