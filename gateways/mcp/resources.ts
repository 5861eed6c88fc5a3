/**
 * @module gateways/mcp/resources
 * Files as MCP resources: `filegate:///<path>` (the URI template `filegate:///{+path}`).
 * A file reads as text when it is UTF-8, else as a base64 blob, up to the `cat` cap; a
 * folder reads as its listing, the `ls` tool's lines. `resources/list` lists the root.
 */
import { lookup } from 'mime-types'
import { type McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js'
import { McpError, type ReadResourceResult } from '@modelcontextprotocol/sdk/types.js'
import { DOOR_PATH_RULES, joinPath } from '../../core/paths.js'
import type { RequestContext } from '../../core/view.js'
import { READ, listAll } from './fs-ops.js'
import { ToolError, describeFailure, resourceErrorCode } from './errors.js'
import { grantOf } from './grant.js'
import { type Extra, type ToolLimits, decodeText, entryLine } from './tools.js'

const SCHEME = 'filegate://'

/** The resource URI of a canonical path (each segment percent-encoded). */
export function resourceUri(path: string): string {
  return SCHEME + path.split('/').map(encodeURIComponent).join('/')
}

/** MCP's code for a resource that does not exist (the spec's -32002; the SDK names none). */
const RESOURCE_NOT_FOUND = -32002

/** The canonical path a resource URI names; `..` above the root is refused like everywhere. */
export function resourcePath(uri: URL): string {
  if (uri.protocol !== 'filegate:' || uri.host !== '') throw new ToolError('INVALID_INPUT', `not a filegate resource: ${uri.href}`)
  let raw: string
  try {
    raw = decodeURIComponent(uri.pathname)
  } catch {
    throw new ToolError('INVALID_INPUT', `the resource URI is not validly percent-encoded: ${uri.href}`)
  }
  return DOOR_PATH_RULES.mcp(raw || '/')
}

export function registerResources(server: McpServer, limits: ToolLimits): void {
  const ctxOf = (extra: Extra): RequestContext => ({ requestId: grantOf(extra.authInfo).requestId, signal: extra.signal })
  /** Failures as JSON-RPC errors (a resource read has no `isError` result), through this door's table (./errors.ts). */
  const failing = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn()
    } catch (err) {
      const f = describeFailure(err)
      throw new McpError(resourceErrorCode(f.code, RESOURCE_NOT_FOUND), `${f.code}: ${f.message}`)
    }
  }
  server.registerResource(
    'files',
    new ResourceTemplate(`${SCHEME}/{+path}`, {
      list: async (extra) =>
        failing(async () => {
          const { fs } = grantOf(extra.authInfo)
          const { entries } = await listAll(fs, ctxOf(extra), '/', 1000)
          return {
            resources: entries.map((e) => ({
              uri: resourceUri(joinPath('/', e.name)) + (e.kind === 'dir' ? '/' : ''),
              name: e.name,
              ...(e.kind === 'dir' ? { mimeType: 'text/plain' } : { mimeType: lookup(e.name) || 'application/octet-stream', size: e.size }),
            })),
          }
        }),
    }),
    { title: 'Files', description: 'A file (its content) or a folder (its listing), by path: filegate:///docs/notes.md' },
    async (uri, _vars, extra): Promise<ReadResourceResult> =>
      failing(async () => {
        const { fs } = grantOf(extra.authInfo)
        const ctx = ctxOf(extra)
        const path = resourcePath(uri)
        const st = await fs.stat(ctx, path)
        if (st.kind === 'dir') {
          const { entries } = await listAll(fs, ctx, path, limits.lsEntries)
          return { contents: [{ uri: uri.href, mimeType: 'text/plain', text: entries.map(entryLine).join('\n') }] }
        }
        const h = await fs.open(ctx, path, READ)
        let data: Uint8Array
        try {
          data = await h.read(0, limits.catBytes)
        } finally {
          await h.close()
        }
        if (data.byteLength < st.size) throw new ToolError('TOO_LARGE', `${path} is larger than ${limits.catBytes} bytes: read it in parts with the cat tool`)
        const mimeType = lookup(path) || 'application/octet-stream'
        const text = decodeText(data, false)
        return { contents: [text === null ? { uri: uri.href, mimeType, blob: Buffer.from(data).toString('base64') } : { uri: uri.href, mimeType, text }] }
      }),
  )
}
