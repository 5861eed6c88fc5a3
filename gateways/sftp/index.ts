/**
 * @module gateways/sftp
 * The SFTP gateway (docs/sftp-gateway.md): any SFTP client in front of
 * any storage, users logging in through the gateway login (core/gateway.ts).
 */
import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import type { DrainRegistration } from '../../core/doors.js'
import type { Gateway, GatewayContext } from '../../core/gateway.js'
import { loadOrCreateHostKey } from './hostkey.js'
import { type SshListener, listenSsh } from './server.js'
import type { StartupLimits } from './startups.js'

export interface SftpGatewayOptions {
  /** 0 picks a free port (the gateway's `port` tells which). */
  readonly port: number
  readonly host: string
  /** Time a connection gets to log in (default 120 s). */
  readonly loginGraceMs?: number
  /** Time a connection gets to finish its key exchange (default 15 s). */
  readonly kexGraceMs?: number
  /** The caps on connections not logged in (default: 32:30:256, and 16 per address). */
  readonly startups?: StartupLimits
  /** Connections of every kind at most; 0 or absent: a quarter of the process's descriptor limit. */
  readonly maxConnections?: number
  /** Whether a connection from this peer (a balancer) begins with a PROXY protocol header naming the client. */
  readonly proxied?: (peer: string) => boolean
  /** SSH threads the connections are spread over (./ssh-threads.ts); 0 or absent: the main thread; 'auto': `defaultThreads()`. */
  readonly threads?: number | 'auto'
}

export function createSftpGateway(opts: SftpGatewayOptions): Gateway {
  let listener: SshListener | null = null
  let drain: DrainRegistration | null = null
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
        meter: ctx.meter('sftp'),
        ...(opts.loginGraceMs ? { graceMs: opts.loginGraceMs } : {}),
        ...(opts.kexGraceMs ? { kexGraceMs: opts.kexGraceMs } : {}),
        ...(opts.startups ? { startups: opts.startups } : {}),
        maxConnections: opts.maxConnections || defaultMaxConnections(),
        ...(opts.proxied ? { proxied: opts.proxied } : {}),
        threads: opts.threads === 'auto' ? defaultThreads() : (opts.threads ?? 0),
      })
      drain = ctx.drain.register(listener.drain)
      ctx.log('info', 'sftp gateway listening', { address: `${opts.host}:${listener.port}`, host_key: key.fingerprint })
    },
    async stop(graceMs?: number) {
      await drain?.stop(graceMs ?? 0)
      drain = null
      listener = null
    },
  }
}

/**
 * One SSH thread per core, at most 8; on a single core none (the relay between the socket
 * and a thread would only add work to the one core).
 */
export function defaultThreads(): number {
  const cores = availableParallelism()
  return cores < 2 ? 0 : Math.min(cores, 8)
}

/**
 * A quarter of the process's descriptor limit (its soft RLIMIT_NOFILE, read from Linux's
 * /proc/self/limits), at least 64: the SFTP door leaves the rest to the HTTP listener, the
 * S3 door, backends and files. 4096 where the limit cannot be read.
 */
export function defaultMaxConnections(): number {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max open files'))
    const soft = Number(line?.split(/\s{2,}/)[1])
    if (Number.isSafeInteger(soft) && soft > 0) return Math.max(64, Math.floor(soft / 4))
  } catch {
    // not Linux
  }
  return 4096
}
