/**
 * @module gateways/mcp/tools
 * The MCP tools (docs/mcp-gateway.md): ls, cat, write, mkdir, touch, mv, rm, stat,
 * find, share. Each acts through the `View` its request's credential grants
 * (gateways/mcp/grant.ts), on paths canonicalised by the MCP door's rule
 * (core/paths.ts `DOOR_PATH_RULES.mcp`: `..` above the root is refused, never resolved), and reports
 * failures as `isError` results through MCP's own error table (gateways/mcp/errors.ts).
 *
 * The tools are in gateways/mcp/tools/: read.ts (ls, cat, stat, find), write.ts (write,
 * mkdir, touch, mv, rm), share.ts; what they are made with, common.ts.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { type ToolDeps, toolRunner } from './tools/common.js'
import { registerReadTools } from './tools/read.js'
import { registerShareTool } from './tools/share.js'
import { registerWriteTools } from './tools/write.js'

export { DEFAULT_LIMITS, type Extra, type ToolDeps, type ToolLimits, decodeText, entryLine, entryOut } from './tools/common.js'

export function registerTools(server: McpServer, deps: ToolDeps): void {
  const run = toolRunner(deps)
  registerReadTools(server, deps, run)
  registerWriteTools(server, deps, run)
  registerShareTool(server, deps, run)
}
