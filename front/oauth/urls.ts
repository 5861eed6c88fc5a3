/**
 * @module front/oauth/urls
 * Where filegate's authorization server and the MCP resource live (docs/mcp-auth.md):
 * the issuer is the service's public origin (front/public-url.ts), the MCP resource
 * `<issuer>/mcp`. The MCP server's legacy SSE address (`/sse`, with `/messages`) is
 * the same server: a client that starts there asks for a token for `<issuer>/sse`,
 * which names the same resource.
 */

export const MCP_PATH = '/mcp'
/** Other addresses of the MCP server, one resource with `/mcp`. */
const ALIASES = ['/sse', '/messages']

/** The canonical MCP resource `resource` names (`<issuer>/mcp`), or null when it names no resource of this server. */
export function canonicalResource(issuer: string, resource: string): string | null {
  if (resource === issuer + MCP_PATH) return resource
  return ALIASES.some((p) => resource === issuer + p) ? issuer + MCP_PATH : null
}
