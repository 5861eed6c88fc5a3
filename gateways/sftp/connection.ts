/**
 * @module gateways/sftp/connection
 * One SSH connection: authentication (./auth.ts), then `sftp` subsystem channels
 * (./session.ts). Everything else a client may ask (shell, exec, pty, env, X11, agent
 * and TCP forwarding, other subsystems) is refused. The connection's end closes the
 * user's view, aborting whatever was still open.
 */
import { randomBytes } from 'node:crypto'
import type { Connection, ClientInfo } from 'ssh2'
import type { DoorMeter } from '../../core/doors.js'
import type { GatewayLogin } from '../../core/gateway.js'
import { type LoggedIn, authenticate } from './auth.js'
import type { SendBudget } from './send-budget.js'
import { type Work, serveSftp } from './session.js'

export const ONLY_SFTP = 'filegate: only the sftp subsystem is served\n'
/** Session channels one connection may hold open at once (as OpenSSH's MaxSessions). */
export const MAX_SESSIONS = 10

export interface ConnectionOptions {
  readonly login: GatewayLogin
  /** Called once the client has logged in. */
  readonly loggedIn: () => void
  /** The connection's TCP socket: corked while a session writes, so ssh2's packets leave together. */
  readonly socket?: { cork(): void; uncork(): void }
  /** What the connection has under way (./session.ts): a shutdown waits until it is none. */
  readonly work?: Work
  /** The connection's cap on bytes on their way to the client (./send-budget.ts). */
  readonly sendBudget?: SendBudget
  /** The door's counters (core/doors.ts): requests, errors, file bytes, sessions. */
  readonly meter?: DoorMeter
  readonly log: (level: 'debug' | 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void
}

export function onConnection(client: Connection, info: ClientInfo, opts: ConnectionOptions): void {
  const connId = `sftp-${randomBytes(6).toString('hex')}`
  const address = info.ip
  let who: LoggedIn | null = null
  let over = false
  client.on('error', (err: Error) => opts.log('debug', 'sftp connection error', { connId, address, err: err.message }))
  client.once('close', () => {
    over = true
    who?.fs.close()
    if (who) opts.log('info', 'sftp connection closed', { connId, user: who.user })
  })
  authenticate(client, { login: opts.login, address, connId, log: opts.log }, (w) => {
    who = w
    opts.loggedIn()
    // The view was ended from outside (the user was removed, or its password or keys
    // changed): the connection ends with it.
    const ended = w.fs.ended
    if (ended === undefined) return
    const onEnded = () => {
      if (over) return
      opts.log('info', 'sftp connection closed: the login is no longer valid', { connId, user: w.user })
      client.end()
    }
    if (ended.aborted) return onEnded()
    ended.addEventListener('abort', onEnded, { once: true })
  })

  let sessions = 0
  client.on('session', (accept, reject) => {
    if (sessions >= MAX_SESSIONS) return reject()
    sessions++
    const session = accept()
    session.once('close', () => sessions--)
    // The `sftp` subsystem is taken as a plain channel: the gateway speaks SFTP itself
    // (./wire/), ssh2 the SSH beneath.
    session.on('subsystem', (acceptSub, reject, info) => {
      if (who === null || info.name !== 'sftp') return reject()
      serveSftp(acceptSub(), { fs: who.fs, user: who.user, connId, address, log: opts.log, ...(opts.socket ? { socket: opts.socket } : {}), ...(opts.work ? { work: opts.work } : {}), ...(opts.sendBudget ? { sendBudget: opts.sendBudget } : {}), ...(opts.meter ? { meter: opts.meter } : {}) })
    })
    const refuseCommand = (accept: () => { stderr: { write(s: string): void }; exit(code: number): void; end(): void }) => {
      const ch = accept()
      ch.stderr.write(ONLY_SFTP)
      ch.exit(1)
      ch.end()
    }
    session.on('exec', (acceptExec) => refuseCommand(acceptExec))
    session.on('shell', (acceptShell) => refuseCommand(acceptShell))
    for (const ev of ['pty', 'env', 'x11', 'auth-agent', 'signal', 'window-change'] as const) {
      session.on(ev as 'pty', (_accept, reject) => reject?.())
    }
  })
  // TCP and socket forwarding, both directions.
  client.on('tcpip', (_accept, reject) => reject())
  client.on('openssh.streamlocal', (_accept, reject) => reject())
  client.on('request', (_accept, reject) => reject?.())
}
