/**
 * @module front/public-url
 * The HTTP API's address as clients reach it: `public_url`, or `http://<host>:<port>`
 * as listened. The OAuth issuer, the MCP resource and the URLs filegate hands out are
 * built from it.
 */
import type { Config } from '../core/config.js'

export function publicOrigin(config: Config, port: number): string {
  if (config.public_url !== null) return config.public_url
  const host = config.host.includes(':') ? `[${config.host}]` : config.host
  return `http://${host}:${port}`
}
