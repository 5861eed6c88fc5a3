/**
 * @module gateways/mcp/server
 * One MCP server per session: filegate's tools (gateways/mcp/tools.ts) and file
 * resources (gateways/mcp/resources.ts) on the SDK's `McpServer`.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { registerResources } from './resources.js'
import { type ToolDeps, registerTools } from './tools.js'

const INSTRUCTIONS =
  'Files of one storage (a folder, a bucket, a server...), as the login that connected sees them: "/" is its root and nothing above it can be reached. ' +
  'Paths are absolute ("/docs/a.md"). ls lists a folder, cat reads a file (in parts when large), write replaces a whole file; find looks for names.'

export function createMcpServer(deps: ToolDeps & { readonly version: string }): McpServer {
  const server = new McpServer({ name: 'filegate', title: 'filegate', version: deps.version }, { instructions: INSTRUCTIONS, capabilities: { tools: {}, resources: {} } })
  registerTools(server, deps)
  registerResources(server, deps.limits)
  return server
}
