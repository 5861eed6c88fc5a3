/**
 * @module gateways/sftp/auth
 * SSH user authentication for one connection, decided by the gateway login
 * (core/gateway.ts): passwords, and public keys whose signature ssh2 checks here.
 * Every refusal looks the same to the client whatever was wrong (the login delays
 * and throttles failures); a connection gets `MAX_AUTH_TRIES` failures (its time
 * to log in is ./server.ts's).
 */
import type { AuthContext, Connection } from 'ssh2'
import { utils } from './ssh2.js'
import type { GatewayLogin, LoginResult } from '../../core/gateway.js'
import type { View } from '../../core/view.js'

export const MAX_AUTH_TRIES = 6
const METHODS: ('password' | 'publickey')[] = ['publickey', 'password']

export interface AuthOptions {
  readonly login: GatewayLogin
  readonly address: string
  readonly connId: string
  readonly log: (level: 'debug' | 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void
}

export interface LoggedIn {
  readonly user: string
  readonly fs: View
}

/**
 * Answers `client`'s authentication requests; `onLogin` gets the user's view once one
 * succeeds. The connection is closed after too many failures.
 */
export function authenticate(client: Connection, opts: AuthOptions, onLogin: (who: LoggedIn) => void): void {
  let failures = 0
  let closed = false
  const fields = { connId: opts.connId, address: opts.address }
  client.once('close', () => {
    closed = true
  })

  const refuse = (ctx: AuthContext, why: string, extra: Record<string, unknown> = {}): void => {
    failures++
    opts.log(why === 'throttled' ? 'warn' : 'info', 'sftp login refused', { ...fields, user: ctx.username, method: ctx.method, reason: why, ...extra })
    ctx.reject(METHODS)
    if (failures >= MAX_AUTH_TRIES) {
      opts.log('info', 'sftp connection closed: too many failed logins', fields)
      client.end()
    }
  }
  const decide = (ctx: AuthContext, r: LoginResult): void => {
    if (!r.ok) return refuse(ctx, r.reason)
    if (closed) return r.fs.close()
    opts.log('info', 'sftp login', { ...fields, user: r.user, method: ctx.method })
    onLogin({ user: r.user, fs: r.fs })
    ctx.accept()
  }
  const base = { door: 'sftp' as const, address: opts.address, requestId: opts.connId }

  client.on('authentication', (ctx) => {
    void (async () => {
      switch (ctx.method) {
        case 'password':
          return decide(ctx, await opts.login.login({ ...base, user: ctx.username, password: ctx.password }))
        case 'publickey': {
          const key = { algo: ctx.key.algo, data: ctx.key.data }
          if (ctx.signature === undefined || ctx.blob === undefined) {
            // The client asks whether this key would do before signing with it.
            if (await opts.login.keyAuthorized(ctx.username, key)) return ctx.accept()
            return refuse(ctx, 'refused', { query: true })
          }
          const parsed = utils.parseKey(ctx.key.data)
          if (parsed instanceof Error || parsed.verify(ctx.blob, ctx.signature, ctx.hashAlgo) !== true) return refuse(ctx, 'bad signature')
          return decide(ctx, await opts.login.login({ ...base, user: ctx.username, publicKey: key }))
        }
        default:
          // `none` (clients start with it to learn the methods), keyboard-interactive, hostbased.
          return ctx.reject(METHODS)
      }
    })().catch((err: unknown) => {
      opts.log('error', 'sftp login failed', { ...fields, err: String((err as Error)?.stack ?? err) })
      refuse(ctx, 'error')
    })
  })
}
