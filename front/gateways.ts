/**
 * @module front/gateways
 * The built-in gateways the configuration turns on (SFTP, S3, MCP), made from their
 * settings; front/app.ts starts them with the plugins' own.
 */
import { type Config, parseMaxStartups } from '../core/config.js'
import type { Gateway } from '../core/gateway.js'
import { createMcpGateway } from '../gateways/mcp/index.js'
import { createS3Gateway } from '../gateways/s3/index.js'
import { createSftpGateway } from '../gateways/sftp/index.js'
import { isTrustedProxy } from './http/client-address.js'
import { version } from './version.js'

/**
 * `trustProxy`: the balancers whose PROXY header (SFTP) names the client; `publicUrl`:
 * the API's address as clients reach it (MCP's resource).
 */
export function builtInGateways(config: Config, trustProxy: ReadonlySet<string>, publicUrl: () => string): Gateway[] {
  const builtIn: Gateway[] = []
  if (config.sftp.port !== 'off') {
    const sftpPort = config.sftp.port
    const proxied = config.sftp.proxy_protocol ? (peer: string) => isTrustedProxy(peer, trustProxy) : undefined
    const sftp = config.sftp
    const ms = parseMaxStartups(sftp.max_startups)!
    builtIn.push(
      createSftpGateway({
        port: sftpPort,
        host: sftp.host ?? config.host,
        loginGraceMs: sftp.login_grace_seconds * 1000,
        kexGraceMs: sftp.kex_grace_seconds * 1000,
        startups: { ...ms, perAddress: sftp.max_startups_per_address },
        maxConnections: sftp.max_connections,
        threads: sftp.threads,
        ...(proxied ? { proxied } : {}),
      }),
    )
  }
  if (config.s3.port !== 'off') builtIn.push(createS3Gateway({ port: config.s3.port, host: config.s3.host ?? config.host, region: config.s3.region, baseDomain: config.s3.base_domain, multipartExpiryHours: config.s3.multipart_expiry_hours, corsOrigins: config.cors.origins }))
  if (config.mcp.enabled) {
    builtIn.push(
      createMcpGateway({
        publicUrl,
        corsOrigins: config.cors.origins,
        idleSeconds: config.mcp.session_idle_seconds,
        maxSessions: config.mcp.max_sessions,
        sessionsPerSubject: config.mcp.sessions_per_login,
        sessionsPerAddress: config.mcp.sessions_per_address,
        callsPerSubject: config.mcp.calls_per_login,
        maxBatch: config.mcp.max_batch,
        version,
      }),
    )
  }
  return builtIn
}
