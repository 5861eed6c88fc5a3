/**
 * @module front/exposure
 * What the configuration opens to whoever reaches the port, said at start-up:
 * tmp sessions (unauthenticated scratch spaces) and public local connections; and a
 * non-loopback host without `public_url`, whose OAuth addresses clients may not reach.
 */
import { type Config, isLoopbackHost } from '../core/config.js'
import type { Logger } from './log.js'

export function logExposure(config: Config, logger: Logger): void {
  const loopback = isLoopbackHost(config.host)
  const host = config.host
  if (config.tmp_sessions) {
    logger.log(
      loopback ? 'info' : 'warn',
      loopback
        ? 'tmp sessions are on: unauthenticated scratch spaces for anyone on this machine'
        : 'tmp sessions are on for a non-loopback host: anyone who reaches the port can open a scratch space (set tmp_sessions: false to turn them off)',
      { host },
    )
  } else {
    logger.log('info', loopback ? 'tmp sessions are off' : 'tmp sessions are off, the default for a non-loopback host (set tmp_sessions: true to allow them)', { host })
  }
  for (const c of config.connections) {
    if (c.type === 'local' && c.public === true) {
      logger.log(loopback ? 'info' : 'warn', `local connection "${c.label}" is public: no password needed to read and write ${String(c.path)}`, { host })
    }
  }
  if (!loopback && config.public_url === null && config.mcp.enabled) {
    logger.log('warn', `public_url is not set: MCP clients are told to log in at http://${host}:<port> (the OAuth issuer and the MCP resource); set public_url to the address they reach`, { host })
  }
}
