/**
 * @module gateways/sftp
 * The SFTP gateway (docs/sftp-gateway.md): any SFTP client in front of
 * any storage, users logging in through the gateway login (core/gateway.ts).
 */
import { join } from 'node:path'
import type { Gateway, GatewayContext } from '../../core/gateway.js'
import { loadOrCreateHostKey } from './hostkey.js'
import { type SshListener, listenSsh } from './server.js'

export interface SftpGatewayOptions {
  /** 0 picks a free port (the gateway's `port` tells which). */
  readonly port: number
  readonly host: string
  /** Time a connection gets to log in (default 120 s). */
  readonly loginGraceMs?: number
  /** Whether a connection from this peer (a balancer) begins with a PROXY protocol header naming the client. */
  readonly proxied?: (peer: string) => boolean
}

export function createSftpGateway(opts: SftpGatewayOptions): Gateway {
  let listener: SshListener | null = null
  return {
    name: 'sftp',
    get port() {
      return listener?.port ?? 0
    },
    async start(ctx: GatewayContext) {
      const key = await loadOrCreateHostKey(join(ctx.dataDir, 'sftp'))
      if (key.created) ctx.log('info', 'sftp host key created', { path: key.path })
      if (key.fixed) ctx.log('warn', 'sftp host key was readable by others: made private (0600); consider replacing it', { path: key.path })
      listener = await listenSsh(key.privateKey, opts.host, opts.port, {
        login: ctx.login,
        log: ctx.log,
        ...(opts.loginGraceMs ? { graceMs: opts.loginGraceMs } : {}),
        ...(opts.proxied ? { proxied: opts.proxied } : {}),
      })
      ctx.log('info', 'sftp gateway listening', { address: `${opts.host}:${listener.port}`, host_key: key.fingerprint })
    },
    async stop(graceMs?: number) {
      await listener?.close(graceMs)
      listener = null
    },
  }
}
