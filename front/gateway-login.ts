/**
 * @module front/gateway-login
 * Logins at the protocol gateways (SFTP, S3, MCP; core/gateway.ts), in two kinds
 * (docs/gateways.md, "Gateway users and logins"):
 *
 * - **gateway users**, defined by the admin (front/admin.ts): a password (scrypt) or
 *   an authorized public key, mapped to a connection, a root inside it and the eight
 *   permission bits (core/permissions.ts), checked by its view at every door. The backend spec is built as a session builds it
 *   (front/connection-spec.ts) and narrowed to the user's root, so the driver's own
 *   containment holds at that root. A `tmp` user gets a space of its own,
 *   `<data_dir>/gateway-tmp/<name>.<created>` (front/connection-spec.ts).
 * - **pass-through**, `<user>@<connection label>`: the user's own account on an sftp,
 *   ftp, smb or s3 connection that leaves the credentials to its users (for s3: the
 *   access key id and the secret). The backend itself checks the password.
 *
 * Every login ends with one look at the storage (its view opened, `/` looked at): a
 * user whose root is missing, or whose storage cannot be reached, gets `unavailable`
 * (and the admin a warning naming the user and the folder); nothing is created, but
 * for `tmp` spaces.
 *
 * Failures: every way of being wrong (unknown user, wrong password or key, unknown
 * connection, a password the backend refused) gets the same `refused` after the same
 * fixed delay (front/passwords.ts); an unknown user costs the same scrypt check as a
 * known one. One throttle counts failures per client address for all gateway doors
 * together, apart from the HTTP API's. A success takes back only its own count, not
 * the failures before it: an account of one's own cannot buy more guesses at another's.
 *
 * A gateway user's password that was right a few minutes ago, against the same stored
 * hash, is not checked by scrypt again (front/password-cache.ts): clients open many
 * sessions with the same password.
 *
 * **Signature logins** (S3, one per request): `user` is an access key id
 * (front/s3-keys.ts); the key's secret is handed to the request's own `verify`, and
 * the key acts as its gateway user. No scrypt is involved, and the user's view is
 * shared between its requests while they come (gateways/connection/shared-views.ts): the storage is
 * looked at when the view is opened, not on every request. An unknown or revoked key
 * and a wrong signature are refused alike, delayed and throttled as a wrong password.
 *
 * **Revocation**: a view opened by a gateway user's password or key login (an SFTP
 * connection) stays valid while the user exists as made, with the same password and the
 * same permission bits (the view holds the bits it was opened with), and (a key login)
 * still has that key. Removing the user, setting its password, changing its bits or
 * removing the key closes the view at once on this node (the admin API calls `changed`),
 * and within `REVALIDATE_MS` on every other node; its connection then ends
 * (core/view.ts `ended`), and the client's next login gets the user as it is now.
 * Per-request logins (S3 signatures, OAuth grants) read the user and the key at every
 * request: their shared views are keyed by the bits, so a change applies from the next request.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { rm } from 'node:fs/promises'
import { ApiError, isApiError } from '../core/api-error.js'
import type { BackendSpec } from '../core/backend.js'
import type { Config } from '../core/config.js'
import { FsError, isFsError } from '../core/errors.js'
import type { GatewayLogin, LoginRequest, LoginResult, PublicKey } from '../core/gateway.js'
import { FULL_ACCESS, type Permissions, changesNothing, describePermissions, intersect, toBits } from '../core/permissions.js'
import type { ClientIdentity, View } from '../core/view.js'
import type { GatewayUserRecord, StateStore } from '../core/state.js'
import type { GatewayUserTargets } from './admin.js'
import { type PluginStorageTypes, connectionSpec, gatewayTmpSpec, passthroughAllowed, specWithRoot } from './connection-spec.js'
import type { Logger } from './log.js'
import { type CheckedBy, PasswordCache } from './password-cache.js'
import { MAX_PASSWORD_LENGTH, failureDelay, hashPassword, verifyPassword } from './passwords.js'
import type { S3Keys } from './s3-keys.js'
import { SharedViews } from '../gateways/connection/index.js'
import { AttemptGate, type AttemptTicket, Throttle } from './throttle.js'

/** Failed gateway logins from one address within WINDOW_MS before every login from it is `throttled`. */
export const GATEWAY_LOGIN_FAILURES = 10
const WINDOW_MS = 15 * 60_000
const SCOPE = 'gateway'
/** Successful password checks are remembered this long (docs/gateways.md, "Repeated logins")… */
const PASSWORD_CACHE_MS = 5 * 60_000
/** …for this many users at most. */
const PASSWORD_CACHE_USERS = 10_000
/** A signature login's view nobody uses is closed after this long. */
const SHARED_VIEW_IDLE_MS = 30_000
/** How often the views of live password and key logins are checked against their users (changes made on other nodes). */
export const REVALIDATE_MS = 5_000

/** Opens the file system view of one login (gateways/connection/view.ts); rejects when the backend cannot be opened. */
export type OpenLoginView = (spec: BackendSpec, opts: { readonly permissions: Permissions; readonly client: ClientIdentity }) => Promise<View>

export interface GatewayLoginOptions {
  readonly config: Config
  readonly state: StateStore
  readonly openFs: OpenLoginView
  readonly logger: Logger
  /** The S3 keys signature logins are checked against. */
  readonly s3Keys: S3Keys
  readonly plugins?: PluginStorageTypes
}

/** A login whose credentials were right, before its storage is looked at. */
interface Granted {
  readonly user: string
  readonly spec: BackendSpec
  /** The user's bits; for a signature login, narrowed by its key's. */
  readonly permissions: Permissions
  /** For the admin's warning when the storage is not there: the user and its folder. */
  readonly where: Record<string, unknown>
  /** For a password login: how the password was checked (front/password-cache.ts). */
  readonly password?: CheckedBy | undefined
  /** For a signature login: the access key id, and the key under which its user's view is shared. */
  readonly signature?: { readonly keyId: string; readonly view: string }
  /** For a gateway user's password or key login: whether the user, as it is now, still grants this login. */
  readonly stillValid?: (now: GatewayUserRecord | null) => boolean
}

/** Right credentials, but no storage can be built for them now (the configuration changed). */
interface Unservable {
  readonly unservable: Record<string, unknown>
}

const REFUSED = 'wrong user name, password or key'
/** A pass-through login's own account: everything its backend lets it do (share links are the HTTP API's). */
const PASSTHROUGH: Permissions = { ...FULL_ACCESS, can_share: false }

/**
 * What a credential issued at a gateway user's login (an OAuth grant) stays bound to:
 * the user as made (`created`) with the password it had. Resetting the password (or
 * making the user anew) ends every such credential. Not secret-bearing: a short hash.
 */
export function loginMark(user: GatewayUserRecord): string {
  return createHash('sha256').update(`${user.created}\0${user.password_hash ?? ''}`).digest('base64url').slice(0, 16)
}

export class GatewayLoginService implements GatewayLogin, GatewayUserTargets {
  readonly #opts: GatewayLoginOptions
  /** A hash of a random password: an unknown user costs the same check as a known one. */
  readonly #decoy: string
  readonly #throttle: Throttle
  readonly #onChanged: ((name: string) => void)[] = []
  /** Four checks at a time per address (scrypt runs on libuv's four threads anyway); the rest wait. */
  readonly #gate = new AttemptGate({ perAddress: 4, maxWaiting: 4096 })
  readonly #recent = new PasswordCache({ ttlMs: PASSWORD_CACHE_MS, max: PASSWORD_CACHE_USERS })
  readonly #views = new SharedViews({ idleMs: SHARED_VIEW_IDLE_MS })
  /** Views of live password and key logins, by user name, with the check that keeps each valid. */
  readonly #live = new Map<string, Map<View, (now: GatewayUserRecord | null) => boolean>>()
  #revalidating: NodeJS.Timeout | null = null

  private constructor(opts: GatewayLoginOptions, decoy: string) {
    this.#opts = opts
    this.#decoy = decoy
    this.#throttle = new Throttle({ state: opts.state, max: GATEWAY_LOGIN_FAILURES, windowMs: WINDOW_MS, what: 'gateway logins' })
  }

  static async open(opts: GatewayLoginOptions): Promise<GatewayLoginService> {
    return new GatewayLoginService(opts, await hashPassword(randomBytes(24).toString('base64')))
  }

  async login(req: LoginRequest): Promise<LoginResult> {
    try {
      return await this.#gate.run(req.address, () => this.#login(req))
    } catch (err) {
      if (!(isApiError(err) && err.code === 'RATE_LIMITED')) throw err
      await failureDelay()
      return { ok: false, reason: 'throttled', message: err.message }
    }
  }

  async #login(req: LoginRequest): Promise<LoginResult> {
    const fields = { door: req.door, user: req.user.slice(0, 200), address: req.address, requestId: req.requestId }
    // A signature is checked in microseconds and cannot be guessed: it is counted when it
    // fails only (no store write per S3 request). A password is counted from the start.
    const signed = req.signature !== undefined
    let attempt: AttemptTicket | null = null
    try {
      if (signed) await this.#throttle.check(SCOPE, req.address)
      else attempt = await this.#throttle.begin(SCOPE, req.address)
    } catch (err) {
      if (!(isApiError(err) && err.code === 'RATE_LIMITED')) throw err
      await failureDelay()
      this.#opts.logger.log('info', 'gateway login throttled', fields)
      return { ok: false, reason: 'throttled', message: err.message }
    }
    try {
      return await this.#checked(req, fields, attempt)
    } finally {
      await attempt?.wrong() // unless settled as right: a failure of any kind keeps its count
    }
  }

  async #checked(req: LoginRequest, fields: Record<string, unknown>, attempt: AttemptTicket | null): Promise<LoginResult> {
    const signed = attempt === null
    const at = req.signature ? -1 : req.user.lastIndexOf('@')
    const granted = req.signature ? await this.#signatureUser(req) : at > 0 ? await this.#passthrough(req, req.user.slice(0, at), req.user.slice(at + 1)) : await this.#gatewayUser(req)
    if (typeof granted === 'string') {
      if (signed) await this.#throttle.failed(SCOPE, req.address)
      return this.#refuse(fields, granted)
    }
    // A gateway user's credentials are checked by now; a pass-through's only by the backend, below.
    if (at <= 0) await attempt?.right()
    if ('unservable' in granted) return this.#unavailable('gateway login: this user cannot be served', { ...fields, ...granted.unservable })
    const client = { address: req.address, credential: `gateway:${granted.user}` }
    const open = async (): Promise<View> => {
      const fs = await this.#opts.openFs(granted.spec, { permissions: granted.permissions, client })
      try {
        const root = await fs.stat({ requestId: req.requestId, signal: new AbortController().signal, client }, '/')
        if (root.kind !== 'dir') throw new FsError('ENOTDIR', 'the root is not a folder')
      } catch (err) {
        fs.close()
        throw err
      }
      return fs
    }
    let fs: View
    try {
      fs = granted.signature ? await this.#views.lease(granted.signature.view, open) : await open()
    } catch (err) {
      const code = isFsError(err) ? err.code : isApiError(err) ? err.code : 'EIO'
      // A pass-through password is checked by the backend itself: refused like any other.
      if (code === 'EAUTH' && at > 0) return this.#refuse(fields, 'the storage refused the password')
      const missing = code === 'ENOENT' || code === 'ENOTDIR'
      const msg = missing ? 'gateway login: the folder of this login does not exist' : 'gateway login: the storage cannot be reached'
      return this.#unavailable(msg, { ...fields, ...granted.where, code })
    }
    if (at > 0) await attempt?.right()
    if (granted.stillValid) this.#track(granted.user, fs, granted.stillValid)
    // One line per S3 request would drown the log: signature logins are logged at debug level.
    const level = granted.signature ? 'debug' : 'info'
    this.#opts.logger.log(level, 'gateway login', { ...fields, read_only: changesNothing(granted.permissions), permissions: describePermissions(granted.permissions), ...(granted.password ? { password: granted.password } : {}), ...(granted.signature ? { user: granted.user, access_key_id: granted.signature.keyId } : {}) })
    return { ok: true, user: granted.user, fs }
  }

  /** Calls `fn` with a gateway user's name when it is removed or changed on this node (HTTP sessions, front/sessions.ts). */
  onChanged(fn: (name: string) => void): void {
    this.#onChanged.push(fn)
  }

  /** Stops the views shared by signature logins (the service stops). */
  close(): void {
    this.#views.close()
    if (this.#revalidating) clearInterval(this.#revalidating)
    this.#revalidating = null
  }

  /** The gateway user `name` was removed or changed (password, keys, bits): its logins that it no longer grants end now. */
  async changed(name: string): Promise<void> {
    for (const fn of this.#onChanged) fn(name)
    const views = this.#live.get(name)
    if (!views) return
    const now = await this.#opts.state.getGatewayUser(name)
    for (const [fs, valid] of [...views]) {
      if (valid(now)) continue
      views.delete(fs)
      this.#opts.logger.log('info', 'gateway login ended: the user was removed or its credentials or permissions changed', { user: name })
      fs.close()
    }
    if (views.size === 0) this.#live.delete(name)
  }

  #track(user: string, fs: View, valid: (now: GatewayUserRecord | null) => boolean): void {
    let views = this.#live.get(user)
    if (!views) this.#live.set(user, (views = new Map()))
    views.set(fs, valid)
    fs.ended?.addEventListener('abort', () => {
      views.delete(fs)
      if (views.size === 0 && this.#live.get(user) === views) this.#live.delete(user)
    }, { once: true })
    this.#revalidating ??= setInterval(() => void this.#revalidate(), REVALIDATE_MS).unref()
  }

  /** Checks every live login's user (another node may have changed it). */
  async #revalidate(): Promise<void> {
    for (const name of [...this.#live.keys()]) {
      try {
        await this.changed(name)
      } catch (err) {
        this.#opts.logger.log('warn', 'gateway logins could not be checked against their user', { user: name, err: String(err) })
      }
    }
    if (this.#live.size === 0 && this.#revalidating) {
      clearInterval(this.#revalidating)
      this.#revalidating = null
    }
  }

  /**
   * A gateway user's view for a credential issued at its login (an OAuth grant,
   * front/oauth/), leased from the views its per-request logins share: null when the user is gone, was made anew, or had its password
   * changed since (`mark`, from `loginMark` at the login).
   */
  async reopen(name: string, mark: string, client: ClientIdentity): Promise<View | null> {
    const user = await this.#opts.state.getGatewayUser(name)
    if (!user || loginMark(user) !== mark) return null
    const spec = this.userSpec(user)
    return this.#views.lease(sharedViewKey(user, user.permissions, spec), () => this.#opts.openFs(spec, { permissions: user.permissions, client }))
  }

  async keyAuthorized(user: string, key: PublicKey): Promise<boolean> {
    const u = user.includes('@') ? null : await this.#opts.state.getGatewayUser(user)
    return keyMatches(u?.keys.map((k) => k.blob) ?? [], key)
  }

  /** A gateway user's credentials → the grant, or why not (for the log). */
  async #gatewayUser(req: LoginRequest): Promise<Granted | Unservable | string> {
    const user = await this.#opts.state.getGatewayUser(req.user)
    let how: CheckedBy | undefined // a key login: no password
    if (req.publicKey !== undefined) {
      if (req.password !== undefined) return 'both a password and a key'
      if (!user) return 'unknown user'
      if (!keyMatches(user.keys.map((k) => k.blob), req.publicKey)) return 'key not authorized'
    } else {
      const { password } = req
      const hash = user?.password_hash ?? null
      const check = () => this.#password(password, hash)
      const wellFormed = typeof password === 'string' && password.length <= MAX_PASSWORD_LENGTH
      const r = user && hash !== null && wellFormed ? await this.#recent.check(user.name, password, hash, check) : { ok: await check(), how: 'checked' as const }
      how = r.how
      if (!user) return 'unknown user'
      if (!r.ok) return user.password_hash === null ? 'the user has no password' : 'wrong password'
    }
    const { created, password_hash } = user
    const bits = toBits(user.permissions)
    const key = req.publicKey
    const stillValid = (now: GatewayUserRecord | null): boolean =>
      now !== null &&
      now.created === created &&
      now.password_hash === password_hash &&
      toBits(now.permissions) === bits &&
      (key === undefined || keyMatches(now.keys.map((k) => k.blob), key))
    return this.#grant(user, () => ({ password: how, stillValid }))
  }

  /** What `user` is granted once its credentials were found right. */
  #grant(user: GatewayUserRecord, extra: (spec: BackendSpec) => Pick<Granted, 'password' | 'signature' | 'stillValid'>, permissions = user.permissions): Granted | Unservable {
    let spec: BackendSpec
    try {
      spec = this.userSpec(user)
    } catch (err) {
      // The configuration changed since the user was made (e.g. its connection is gone).
      if (!(isApiError(err) && err.code === 'INVALID_INPUT')) throw err
      return { unservable: { connection: user.connection, root: user.root, error: err.message } }
    }
    return { user: user.name, spec, permissions, where: { connection: user.connection, root: user.root, folder: describe(spec) }, ...extra(spec) }
  }

  /** An access key id and a request signed with its secret (S3): the key's user. */
  async #signatureUser(req: LoginRequest): Promise<Granted | Unservable | string> {
    if (req.password !== undefined || req.publicKey !== undefined) return 'a signature with a password or a key'
    const key = await this.#opts.s3Keys.find(req.user)
    if (!key) return 'unknown access key'
    if (!req.signature!.verify(key.secret)) return 'wrong signature'
    const user = await this.#opts.state.getGatewayUser(key.user)
    if (!user) return 'unknown user'
    // The key narrows its user's bits: requests signed with it share a view with those bits only.
    const permissions = key.permissions === null ? user.permissions : intersect(user.permissions, key.permissions)
    return this.#grant(user, (spec) => ({ signature: { keyId: key.id, view: sharedViewKey(user, permissions, spec) } }), permissions)
  }

  /** `<name>@<label>`: the user's own account on a connection that leaves credentials to its users. */
  async #passthrough(req: LoginRequest, name: string, label: string): Promise<Granted | string> {
    const conn = this.#opts.config.connections.find((c) => c.label === label)
    if (!conn || !passthroughAllowed(conn) || req.publicKey !== undefined || typeof req.password !== 'string' || req.password.length > MAX_PASSWORD_LENGTH) {
      await this.#password(req.password, null) // the same cost as a real check
      return conn ? `no pass-through login on connection "${label}" with these credentials` : `no connection "${label}"`
    }
    const params = conn.type === 's3' ? { access_key_id: name, secret_access_key: req.password } : { username: name, password: req.password }
    try {
      const { spec } = connectionSpec(conn, params, this.#opts.plugins)
      return { user: req.user, spec, permissions: PASSTHROUGH, where: { connection: label } }
    } catch (err) {
      if (isApiError(err) && err.code === 'INVALID_INPUT') return `malformed credentials (${err.message})`
      throw err
    }
  }

  /** Checks a password against `hash`, or against the decoy when there is none: always one scrypt run. */
  async #password(password: unknown, hash: string | null): Promise<boolean> {
    const wellFormed = typeof password === 'string' && password.length <= MAX_PASSWORD_LENGTH
    const ok = await verifyPassword(wellFormed ? password : '', hash ?? this.#decoy)
    return ok && wellFormed && hash !== null
  }

  #unavailable(msg: string, fields: Record<string, unknown>): LoginResult {
    this.#opts.logger.log('warn', msg, fields)
    return { ok: false, reason: 'unavailable', message: 'the storage of this account cannot be reached now' }
  }

  async #refuse(fields: Record<string, unknown>, why: string): Promise<LoginResult> {
    await failureDelay()
    this.#opts.logger.log('info', 'gateway login refused', { ...fields, why })
    return { ok: false, reason: 'refused', message: REFUSED }
  }

  // GatewayUserTargets (the admin API's checks) --------------------------------------

  labels(): readonly string[] {
    const { config } = this.#opts
    return [...(config.tmp_sessions ? ['tmp'] : []), ...config.connections.map((c) => c.label)]
  }

  check(user: Pick<GatewayUserRecord, 'name' | 'connection' | 'root' | 'created'>): void {
    this.userSpec(user)
  }

  async removed(user: GatewayUserRecord): Promise<void> {
    await this.changed(user.name)
    if (user.connection === 'tmp') await rm(gatewayTmpSpec(this.#opts.config.data_dir, user).root, { recursive: true, force: true })
  }

  /**
   * The backend spec of a gateway user: its connection's (fixed values only), narrowed
   * to its root. @throws ApiError INVALID_INPUT when such a user cannot be served
   */
  userSpec(user: Pick<GatewayUserRecord, 'name' | 'connection' | 'root' | 'created'>): BackendSpec {
    const { config, plugins } = this.#opts
    if (user.connection === 'tmp' && config.tmp_sessions) return specWithRoot(gatewayTmpSpec(config.data_dir, user), user.root)
    const conn = config.connections.find((c) => c.label === user.connection)
    if (!conn) throw new ApiError('INVALID_INPUT', `no connection is labelled ${JSON.stringify(user.connection)}`)
    let spec: BackendSpec
    try {
      spec = connectionSpec(conn, {}, plugins).spec
    } catch (err) {
      if (!(isApiError(err) && err.code === 'INVALID_INPUT')) throw err
      const hint = passthroughAllowed(conn) ? `; its users log in with their own account as <user>@${conn.label}` : ''
      throw new ApiError('INVALID_INPUT', `connection "${conn.label}" does not fix everything a login needs (${err.message})${hint}`)
    }
    return specWithRoot(spec, user.root)
  }
}

/** Where a spec points, for the admin's log: a local folder, or the remote root (never a credential). */
function describe(spec: BackendSpec): string {
  switch (spec.type) {
    case 'plugin':
      return `${spec.plugin}:${spec.backend}`
    case 'local':
      return spec.root
    case 's3':
      return `s3:${spec.root}`
    default:
      return `${spec.type}://${spec.hostname}:${spec.port}/${spec.root.replace(/^\//, '')}`
  }
}

/** Whether `key` is one of `blobs` (base64 wire format); compares with every one, in constant time each. */
function keyMatches(blobs: readonly string[], key: PublicKey): boolean {
  const want = Buffer.from(key.data)
  let found = false
  for (const b of blobs) {
    const have = Buffer.from(b, 'base64')
    if (have.byteLength === want.byteLength && timingSafeEqual(have, want)) found = true
  }
  return found
}

/**
 * The key of a gateway user's view shared by its per-request logins (S3 signatures,
 * OAuth grants): shared while the user, its rights (as narrowed by a key) and its storage stay the same.
 */
function sharedViewKey(user: GatewayUserRecord, permissions: Permissions, spec: BackendSpec): string {
  return JSON.stringify([user.name, user.created, toBits(permissions), spec])
}
