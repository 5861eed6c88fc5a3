/**
 * @module front/sessions
 * Session creation, authentication and revocation (docs/api.md, "Sessions").
 *
 * A session is a sealed token (core/token.ts) carrying its backend spec: no
 * session table. Revocation keeps the token's id in the state store until the
 * token would have expired anyway. A `local` connection (the server's own disk)
 * needs the password its configuration sets, kept only as a scrypt hash, unless
 * the configuration marks it `"public": true`.
 *
 * A gateway user (front/gateway-login.ts, the admin's SFTP/S3/MCP accounts) logs in
 * with `{"type":"gateway","user","password"}` through the gateways' own login (door
 * `http`: its checks, delay and throttle), and gets its connection and root with the
 * user's permission bits. The token is bound to the user as made with that password
 * (`loginMark`): removing the user or changing its password ends the session; a change
 * of the user's bits applies to its next request. Both at once on this node (the admin
 * API's `changed` hook) and within REVALIDATE_MS on the others.
 */
import { createHash, randomBytes } from 'node:crypto'
import { ApiError } from '../core/api-error.js'
import { type BackendSpec, backendKey } from '../core/backend.js'
import type { Config, ConnectionConfig } from '../core/config.js'
import type { StateStore } from '../core/state.js'
import { FULL_ACCESS, type Permissions, READ_ONLY, fromBits, toBits } from '../core/permissions.js'
import { TokenError, seal, unseal } from '../core/token.js'
import { type BuiltSpec, type PluginStorageTypes, connectionSpec, tmpSpec } from './connection-spec.js'
import { type GatewayLoginService, REVALIDATE_MS, loginMark } from './gateway-login.js'
import { checkPassword, hashPassword } from './passwords.js'
import { Throttle } from './throttle.js'

/** What a token carries. Short keys: it travels on every request. */
interface Payload {
  readonly v: 1
  /** Token id (for revocation). */
  readonly id: string
  readonly iat: number
  readonly exp: number
  readonly backendID: string
  readonly home: string
  readonly spec: BackendSpec
  /** backendKey(spec), computed once at login. */
  readonly key: string
  /**
   * A gateway user's session: its name, `loginMark` at the login, and `p`, the user's
   * permission bits then (core/permissions.ts `toBits`; tokens sealed before it had only
   * `ro`, read-only or not). `authenticate` answers with the user's bits as they are now.
   */
  readonly gw?: { readonly u: string; readonly m: string; readonly ro?: boolean; readonly p?: number }
}

export interface Session {
  readonly id: string
  readonly backendID: string
  readonly home: string
  readonly spec: BackendSpec
  /** backendKey(spec): the worker's cache key for this backend. */
  readonly key: string
  readonly expiresAt: number
  /** A gateway user's session (absent: a connection's or a tmp user's, with every right); from `authenticate`, the user's current bits. */
  readonly gateway?: { readonly user: string; readonly mark: string; readonly permissions: Permissions }
}

/** A token that was a session's, and is no more: told apart for the gateways' bearer answers. */
export class SessionEnded extends ApiError {
  constructor(
    readonly why: 'expired' | 'revoked',
    message: string,
  ) {
    super('NOT_AUTHENTICATED', message)
  }
}

export interface NewSession {
  readonly session: Session
  readonly token: string
}

const USER_ID = /^[A-Za-z0-9_-]{1,64}$/
/** Wrong passwords for one local connection from one address within 15 minutes before 429. */
export const LOCAL_PASSWORD_FAILURES = 5
/** Unsealed tokens remembered at most. */
const OPENED_MAX = 10_000

/** Checks a backend once at login (e.g. that its folder or server answers). */
export type BackendProbe = (spec: BackendSpec, requestId: string) => Promise<void>

export interface SessionOptions {
  readonly secret: Buffer
  readonly config: Config
  readonly state: StateStore
  readonly probe: BackendProbe
  readonly plugins?: PluginStorageTypes
  /** Gateway users' logins (`"type": "gateway"`); absent: refused. */
  readonly gatewayLogin?: GatewayLoginService
}

export class SessionService {
  readonly #key: Buffer
  readonly #config: Config
  readonly #state: StateStore
  readonly #probe: BackendProbe
  /** Token → its unsealed session (see #open). */
  readonly #opened = new Map<string, Session>()
  readonly #plugins: PluginStorageTypes | undefined
  /** Label → scrypt hash of each non-public local connection's password. */
  readonly #localHashes: ReadonlyMap<string, string>
  readonly #throttle: Throttle
  readonly #gatewayLogin: GatewayLoginService | undefined
  /** `user\0mark` → until when the gateway user was last seen granting it, and its bits then (see #gatewayNow). */
  readonly #gatewaySeen = new Map<string, { readonly until: number; readonly permissions: Permissions }>()
  #issued = 0

  private constructor(opts: SessionOptions, localHashes: ReadonlyMap<string, string>) {
    this.#key = opts.secret
    this.#config = opts.config
    this.#state = opts.state
    this.#throttle = new Throttle({ state: opts.state, max: LOCAL_PASSWORD_FAILURES, windowMs: 15 * 60_000, what: 'connection passwords' })
    this.#probe = opts.probe
    this.#plugins = opts.plugins
    this.#localHashes = localHashes
    this.#gatewayLogin = opts.gatewayLogin
    // The admin removed or changed a user here: its sessions are checked again (and get its bits) at their next request.
    opts.gatewayLogin?.onChanged((name) => {
      for (const k of this.#gatewaySeen.keys()) if (k.startsWith(`${name}\0`)) this.#gatewaySeen.delete(k)
    })
  }

  /** Hashes the local connections' passwords once, at start-up. */
  static async open(opts: SessionOptions): Promise<SessionService> {
    const hashes = new Map<string, string>()
    for (const c of opts.config.connections) {
      if (c.type === 'local' && typeof c.password === 'string') hashes.set(c.label, await hashPassword(c.password))
    }
    return new SessionService(opts, hashes)
  }

  /**
   * POST /api/session: validates the request, checks the connection's password
   * (local) and the backend, issues a token. `address` is the client's, for the
   * password throttle.
   */
  async create(body: unknown, requestId: string, address: string): Promise<NewSession> {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw new ApiError('INVALID_INPUT', 'the body must be a JSON object with at least "type"')
    }
    const params = body as Record<string, unknown>
    let built: BuiltSpec & { gw?: Payload['gw'] }
    if (params.type === 'gateway') {
      built = await this.#gatewayUser(params, requestId, address) // its storage was looked at by the login
    } else {
      built = params.type === 'tmp' ? this.#tmp(params) : await this.#connection(params, address)
      if (!('createRoot' in built.spec && built.spec.createRoot)) await this.#check(built.spec, requestId)
    }
    const { spec, identity } = built
    const now = Date.now()
    const payload: Payload = {
      v: 1,
      id: randomBytes(12).toString('base64url'),
      iat: now,
      exp: now + this.#config.session.ttl_seconds * 1000,
      backendID: createHash('sha256').update(identity).digest('hex').slice(0, 24),
      home: '/',
      spec,
      key: backendKey(spec),
      ...(built.gw ? { gw: built.gw } : {}),
    }
    this.#issued++
    return { session: toSession(payload), token: seal(payload, this.#key) }
  }

  /** Sessions created since start (admin status). */
  get issued(): number {
    return this.#issued
  }

  /** The session behind an `Authorization` header. @throws ApiError NOT_AUTHENTICATED */
  async authenticate(authorization: string | undefined): Promise<Session> {
    if (!authorization) throw new ApiError('NOT_AUTHENTICATED', 'no credential: send "Authorization: Bearer <token>"')
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization)
    if (!m) throw new ApiError('NOT_AUTHENTICATED', 'the Authorization header must be "Bearer <token>"')
    const token = m[1]!
    const session = this.#opened.get(token) ?? this.#open(token)
    if (session.expiresAt <= Date.now()) {
      this.#opened.delete(token)
      throw new SessionEnded('expired', 'the token has expired: create a new session')
    }
    // Checked on every request, cached or not: a revocation takes effect at once.
    if (await this.#state.isTokenRevoked(session.id)) throw new SessionEnded('revoked', 'the token was revoked')
    if (!session.gateway) return session
    const permissions = await this.#gatewayNow(session.gateway)
    if (!permissions) throw new SessionEnded('revoked', 'the gateway user of this session was removed or its password changed')
    // The user's bits as they are now, not as they were at the login (the admin may have changed them).
    return toBits(permissions) === toBits(session.gateway.permissions) ? session : { ...session, gateway: { ...session.gateway, permissions } }
  }

  /**
   * The bits of the gateway user of a session made at its login, or null when it no
   * longer grants it (not there, made anew, another password). A yes is trusted for
   * REVALIDATE_MS (a store read per request would double the cost of each); a change
   * made on this node drops it at once (`onChanged`).
   */
  async #gatewayNow(g: NonNullable<Session['gateway']>): Promise<Permissions | null> {
    const k = `${g.user}\0${g.mark}`
    const seen = this.#gatewaySeen.get(k)
    if (seen !== undefined && seen.until > Date.now()) return seen.permissions
    const user = await this.#state.getGatewayUser(g.user)
    this.#gatewaySeen.delete(k)
    if (user === null || loginMark(user) !== g.mark) return null
    if (this.#gatewaySeen.size >= OPENED_MAX) this.#gatewaySeen.delete(this.#gatewaySeen.keys().next().value!)
    this.#gatewaySeen.set(k, { until: Date.now() + REVALIDATE_MS, permissions: user.permissions })
    return user.permissions
  }

  /**
   * Unseals a token and remembers the result: a client sends the same token with every
   * request, and decrypting it each time was a measurable share of the main thread.
   * Only tokens that unsealed are kept, at most OPENED_MAX (oldest dropped first).
   */
  #open(token: string): Session {
    let payload: Payload
    try {
      payload = unseal(token, this.#key) as Payload
    } catch (err) {
      if (err instanceof TokenError) throw new ApiError('NOT_AUTHENTICATED', `invalid token: ${err.message}`)
      throw err
    }
    if (payload?.v !== 1) throw new ApiError('NOT_AUTHENTICATED', 'invalid token: unknown payload')
    const session = toSession(payload)
    if (this.#opened.size >= OPENED_MAX) this.#opened.delete(this.#opened.keys().next().value!)
    this.#opened.set(token, session)
    return session
  }

  /** DELETE /api/session. */
  revoke(session: Session): Promise<void> {
    return this.#state.revokeToken(session.id, session.expiresAt)
  }

  /** Opens the backend once: a login fails now, not at the first file request. */
  async #check(spec: BackendSpec, requestId: string): Promise<void> {
    try {
      await this.#probe(spec, requestId)
    } catch (err) {
      // A storage root that is not there is the server's misconfiguration, not the client's mistake.
      const code = (err as { code?: unknown }).code
      if (code === 'ENOENT' || code === 'ENOTDIR') throw new ApiError('BACKEND_UNREACHABLE', 'the storage of this connection cannot be reached', { cause: err })
      throw err
    }
  }

  #tmp(params: Record<string, unknown>): BuiltSpec {
    if (!this.#config.tmp_sessions) throw new ApiError('FORBIDDEN', 'tmp sessions are disabled on this server')
    const userID = params.userID
    if (typeof userID !== 'string' || !USER_ID.test(userID)) {
      throw new ApiError('INVALID_INPUT', '"userID" must be 1 to 64 characters of A-Z, a-z, 0-9, "_" or "-"')
    }
    return {
      spec: tmpSpec(this.#config.data_dir, userID),
      identity: `tmp\0${userID}`, // not the folder: the same user keeps its id if data_dir moves
    }
  }

  /**
   * A gateway user's name and password, checked by the gateways' own login (door
   * `http`): the same checks, the same delay, the same throttle; every way of being
   * wrong gets the same answer.
   */
  async #gatewayUser(params: Record<string, unknown>, requestId: string, address: string): Promise<BuiltSpec & { gw: NonNullable<Payload['gw']> }> {
    const login = this.#gatewayLogin
    if (!login) throw new ApiError('FORBIDDEN', 'gateway users cannot log in here')
    const { user, password } = params
    if (typeof user !== 'string' || user === '' || user.length > 200) throw new ApiError('INVALID_INPUT', '"user" must be the name of a gateway user')
    if (typeof password !== 'string') throw new ApiError('INVALID_INPUT', '"password" must be a string')
    if (user.includes('@')) throw new ApiError('INVALID_INPUT', `"${user}" is a pass-through login: log in with "label" and that account's "username" and "password"`)
    // Read before and after the login: the token is bound to the user whose password was checked.
    const before = await this.#state.getGatewayUser(user)
    const r = await login.login({ door: 'http', user, password, address, requestId })
    if (!r.ok) throw new ApiError(r.reason === 'throttled' ? 'RATE_LIMITED' : r.reason === 'unavailable' ? 'BACKEND_UNREACHABLE' : 'NOT_AUTHENTICATED', r.message)
    r.fs.close() // opened to look at the storage; the HTTP API serves the session through its workers
    const record = await this.#state.getGatewayUser(r.user)
    if (!record || !before || loginMark(record) !== loginMark(before)) throw new ApiError('NOT_AUTHENTICATED', 'this user was changed or removed during the login: log in again')
    return {
      spec: login.userSpec(record),
      identity: `gateway\0${record.name}\0${record.created}`, // a user made anew is another owner
      gw: { u: record.name, m: loginMark(record), p: toBits(record.permissions) },
    }
  }

  async #connection(params: Record<string, unknown>, address: string): Promise<BuiltSpec> {
    const conn = this.#pick(params)
    if (conn.type === 'local') {
      const hash = this.#localHashes.get(conn.label)
      if (hash !== undefined) {
        const refused = `wrong password for connection "${conn.label}"`
        await checkPassword({ throttle: this.#throttle, scope: `local:${conn.label}`, address, password: params.password, hash, refused })
      } else if (conn.public !== true) {
        throw new Error(`local connection "${conn.label}" has neither a password nor "public": true`) // core/config refuses this
      }
    }
    return connectionSpec(conn, params, this.#plugins)
  }

  #pick(params: Record<string, unknown>): ConnectionConfig {
    const { label, type } = params
    const all = this.#config.connections
    if (label !== undefined) {
      const c = all.find((x) => x.label === label)
      if (!c) throw new ApiError('INVALID_INPUT', `no connection is labelled ${JSON.stringify(label)}`)
      if (type !== undefined && c.type !== type) throw new ApiError('INVALID_INPUT', `connection ${JSON.stringify(label)} is not of type ${JSON.stringify(type)}`)
      return c
    }
    if (typeof type !== 'string' || type === '') throw new ApiError('INVALID_INPUT', 'missing "type" (e.g. "tmp")')
    const matches = all.filter((x) => x.type === type)
    if (matches.length === 0) throw new ApiError('FORBIDDEN', `sessions of type "${type}" are not enabled on this server`)
    if (matches.length > 1) throw new ApiError('INVALID_INPUT', `several "${type}" connections exist: pick one with "label"`)
    return matches[0]!
  }
}

function toSession(p: Payload): Session {
  const s = { id: p.id, backendID: p.backendID, home: p.home, spec: p.spec, key: p.key, expiresAt: p.exp }
  if (!p.gw) return s
  const permissions = typeof p.gw.p === 'number' ? fromBits(p.gw.p) : p.gw.ro ? READ_ONLY : { ...FULL_ACCESS, can_share: false }
  return { ...s, gateway: { user: p.gw.u, mark: p.gw.m, permissions } }
}
