/**
 * @module front/admin
 * The admin's credential (docs/api.md, "Admin API"): the password from the
 * config or FILEGATE_ADMIN_PASSWORD, kept only as a scrypt hash once started;
 * admin tokens sealed under a key derived for that purpose alone (front/subkey.ts),
 * so a user's session token can never pass as an admin token, nor the reverse.
 * Logins are throttled per address; admin tokens can be revoked (log out); gateway
 * users and their authorized keys are validated here.
 */
import { randomBytes } from 'node:crypto'
import { ApiError } from '../core/api-error.js'
import { DOOR_PATH_RULES } from '../core/paths.js'
import { FULL_ACCESS, NO_ACCESS, PERMISSION_NAMES, type Permissions, READ_ONLY, changesNothing } from '../core/permissions.js'
import type { AuthorizedKeyRecord, GatewayUserRecord, StateStore } from '../core/state.js'
import { TokenError, seal, unseal } from '../core/token.js'
import { checkPassword, hashPassword } from './passwords.js'
import { parseAuthorizedKey } from './ssh-keys.js'
import { subkey } from './subkey.js'
import { Throttle } from './throttle.js'

const TOKEN_TTL_MS = 3600_000
/** Failed logins from one address within WINDOW_MS before it gets 429. */
export const MAX_FAILURES = 5
const WINDOW_MS = 15 * 60_000

export interface AdminPayload {
  readonly t: 'admin'
  readonly id: string
  readonly exp: number
}

export class AdminService {
  readonly #hash: string | null
  readonly #key: Buffer
  readonly #state: StateStore
  readonly #throttle: Throttle

  private constructor(hash: string | null, secret: Buffer, state: StateStore) {
    this.#hash = hash
    this.#key = subkey(secret, 'admin-token')
    this.#state = state
    this.#throttle = new Throttle({ state, max: MAX_FAILURES, windowMs: WINDOW_MS, what: 'admin logins' })
  }

  static async open(password: string | null, secret: Buffer, state: StateStore): Promise<AdminService> {
    return new AdminService(password === null ? null : await hashPassword(password), secret, state)
  }

  #enabled(): string {
    if (this.#hash === null) {
      throw new ApiError('FORBIDDEN', 'the admin console is off: set "admin_password" in the config file or FILEGATE_ADMIN_PASSWORD, then restart')
    }
    return this.#hash
  }

  /**
   * POST /admin/api/session. `body` is undefined when it was not JSON at all: a
   * malformed login is refused like a wrong password (counted, delayed, 401).
   */
  async login(body: unknown, address: string): Promise<{ token: string; expires: number }> {
    const hash = this.#enabled()
    const password = body !== null && typeof body === 'object' ? (body as { password?: unknown }).password : undefined
    await checkPassword({ throttle: this.#throttle, scope: 'admin', address, password, hash, refused: 'wrong admin password' })
    const exp = Date.now() + TOKEN_TTL_MS
    return { token: seal({ t: 'admin', id: randomBytes(12).toString('base64url'), exp } satisfies AdminPayload, this.#key), expires: exp }
  }

  /** Every other /admin/api/ call: the admin token's payload. */
  async authenticate(authorization: string | undefined): Promise<AdminPayload> {
    this.#enabled()
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')
    if (!m) throw new ApiError('NOT_AUTHENTICATED', 'send "Authorization: Bearer <admin token>" (POST /admin/api/session gives one)')
    let p: AdminPayload
    try {
      p = unseal(m[1]!, this.#key) as AdminPayload
    } catch (err) {
      if (err instanceof TokenError) throw new ApiError('NOT_AUTHENTICATED', 'not an admin token')
      throw err
    }
    if (p?.t !== 'admin') throw new ApiError('NOT_AUTHENTICATED', 'not an admin token')
    if (p.exp <= Date.now()) throw new ApiError('NOT_AUTHENTICATED', 'the admin token has expired: log in again')
    // Same store as user tokens (ids are random 96-bit values): a log-out holds across restarts.
    if (await this.#state.isTokenRevoked(p.id)) throw new ApiError('NOT_AUTHENTICATED', 'the admin token was revoked: log in again')
    return p
  }

  /** DELETE /admin/api/session: the token is refused from now on. */
  async logout(authorization: string | undefined): Promise<void> {
    const p = await this.authenticate(authorization)
    await this.#state.revokeToken(p.id, p.exp)
  }

  /** POST /admin/api/users. */
  async addUser(body: unknown, targets: GatewayUserTargets): Promise<GatewayUserView> {
    const b = object(body)
    if (typeof b.name !== 'string' || !USER_NAME.test(b.name) || /^\.+$/.test(b.name)) {
      throw new ApiError('INVALID_INPUT', '"name" must be 1 to 64 characters of A-Z, a-z, 0-9, ".", "_" or "-" (not only dots)')
    }
    if (b.password !== undefined) password(b.password)
    if (b.authorized_keys !== undefined && (!Array.isArray(b.authorized_keys) || b.authorized_keys.length > MAX_KEYS)) {
      throw new ApiError('INVALID_INPUT', `"authorized_keys" must be a list of at most ${MAX_KEYS} public key lines`)
    }
    const keys = ((b.authorized_keys ?? []) as unknown[]).map((k, i) => parseAuthorizedKey(k, `"authorized_keys"[${i}]`))
    if (new Set(keys.map((k) => k.fingerprint)).size !== keys.length) throw new ApiError('INVALID_INPUT', '"authorized_keys" lists the same key twice')
    if (b.password === undefined && keys.length === 0) throw new ApiError('INVALID_INPUT', 'give "password", "authorized_keys" or both: a gateway user needs a way to log in')
    if (typeof b.connection !== 'string' || !targets.labels().includes(b.connection)) {
      throw new ApiError('INVALID_INPUT', `"connection" must be one of: ${targets.labels().join(', ')}`)
    }
    const root = DOOR_PATH_RULES.http(typeof b.root === 'string' ? b.root : '/', 'root').path
    const permissions = permissionsInput(b) ?? USER_DEFAULT
    const place = { name: b.name, connection: b.connection, root, created: Date.now() }
    targets.check(place)
    const user: GatewayUserRecord = {
      ...place,
      password_hash: b.password === undefined ? null : await hashPassword(b.password as string),
      keys,
      permissions,
    }
    if (!(await this.#state.addGatewayUser(user))) throw new ApiError('CONFLICT', `a gateway user "${b.name}" exists already`)
    return userView(user)
  }

  /**
   * PATCH /admin/api/users/<name>: `"password"` sets a new password (null removes it: a
   * key-only user); `"permissions"` changes the bits it names, `"read_only"` sets all
   * eight by the shorthand. Everything given is checked before anything is written, and
   * written in one change. The caller ends the logins the change no longer grants.
   */
  async patchUser(name: string, body: unknown): Promise<GatewayUserView> {
    const b = object(body)
    for (const k of Object.keys(b)) {
      if (k !== 'password' && k !== 'permissions' && k !== 'read_only') {
        throw new ApiError('INVALID_INPUT', `"${k}" cannot be changed: only "password", "permissions" or "read_only" (remove the user and add it again to change the rest)`)
      }
    }
    if (Object.keys(b).length === 0) throw new ApiError('INVALID_INPUT', 'give "password" (a new one, or null to remove it), "permissions" or "read_only"')
    if ('password' in b && b.password !== null) password(b.password)
    const user = await this.#user(name)
    const permissions = permissionsChange(b, user.permissions)
    if (b.password === null && user.keys.length === 0) throw new ApiError('CONFLICT', `"${name}" has no authorized key: removing its password would leave no way to log in`)
    const hash = !('password' in b) ? undefined : b.password === null ? null : await hashPassword(b.password as string)
    if (!(await this.#state.updateGatewayUser(name, { ...(hash !== undefined ? { password_hash: hash } : {}), ...(permissions ? { permissions } : {}) }))) throw noUser()
    return userView(await this.#user(name))
  }

  /** POST /admin/api/users/<name>/keys: `{"key": "ssh-ed25519 AAAA... comment"}`. */
  async addUserKey(name: string, body: unknown): Promise<AuthorizedKeyView> {
    const key = parseAuthorizedKey(object(body).key, '"key"')
    const r = await this.#state.addGatewayUserKey(name, key)
    if (r === 'no-user') throw noUser()
    if (r === 'duplicate') throw new ApiError('CONFLICT', `"${name}" has this key already (${key.fingerprint})`)
    return keyView(key)
  }

  /** DELETE /admin/api/users/<name>/keys/<fingerprint>. */
  async removeUserKey(name: string, fingerprint: string): Promise<void> {
    const user = await this.#user(name)
    if (!user.keys.some((k) => k.fingerprint === fingerprint)) throw new ApiError('NOT_FOUND', `"${name}" has no key ${fingerprint}`)
    if (user.password_hash === null && user.keys.length === 1) throw new ApiError('CONFLICT', `this is the only way "${name}" logs in (no password): set a password first, or remove the user`)
    if (!(await this.#state.deleteGatewayUserKey(name, fingerprint))) throw new ApiError('NOT_FOUND', `"${name}" has no key ${fingerprint}`)
  }

  /** DELETE /admin/api/users/<name>: the user, its keys, and what the gateways kept for it. */
  async removeUser(name: string, targets: GatewayUserTargets): Promise<void> {
    const user = await this.#user(name)
    if (!(await this.#state.deleteGatewayUser(name))) throw noUser()
    await targets.removed(user)
  }

  async #user(name: string): Promise<GatewayUserRecord> {
    const user = await this.#state.getGatewayUser(name)
    if (!user) throw noUser()
    return user
  }
}

const USER_NAME = /^[A-Za-z0-9._-]{1,64}$/
/** Keys given at a user's creation, at most (more can be added one by one). */
const MAX_KEYS = 100
const noUser = () => new ApiError('NOT_FOUND', 'no such gateway user')

export function object(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new ApiError('INVALID_INPUT', 'the body must be a JSON object')
  return body as Record<string, unknown>
}

/** A gateway user without `permissions` or `read_only` may do everything but make share links (which it never can). */
export const USER_DEFAULT: Permissions = { ...FULL_ACCESS, can_share: false }

/**
 * The rights asked for in an admin API body that makes a gateway user or an S3 key:
 * `permissions`, an object of the eight bits (a bit left out is not granted), or
 * `read_only`, the shorthand kept from before the bits (true: can_read only; false:
 * everything a gateway user may have). Undefined when the body names neither.
 */
export function permissionsInput(b: Record<string, unknown>): Permissions | undefined {
  return permissionsChange(b, NO_ACCESS)
}

/**
 * The bits after a change asked for in an admin API body (PATCH of a gateway user or an
 * S3 key): the bits `permissions` names are set as given, the others stay as in `base`;
 * `read_only` sets all eight by the shorthand. Undefined when the body names neither. A
 * gateway user never makes share links (they would outlive it), so can_share is refused.
 * @throws ApiError INVALID_INPUT naming the field: an unknown bit, a value not true or false, both fields
 */
export function permissionsChange(b: Record<string, unknown>, base: Permissions): Permissions | undefined {
  if (b.read_only !== undefined && typeof b.read_only !== 'boolean') throw new ApiError('INVALID_INPUT', '"read_only" must be true or false')
  if (b.permissions === undefined) return b.read_only === undefined ? undefined : b.read_only ? READ_ONLY : USER_DEFAULT
  if (b.read_only !== undefined) throw new ApiError('INVALID_INPUT', 'give "permissions" or "read_only" (its shorthand), not both')
  const p = b.permissions
  if (p === null || typeof p !== 'object' || Array.isArray(p)) throw new ApiError('INVALID_INPUT', `"permissions" must be an object of true/false bits: ${PERMISSION_NAMES.join(', ')}`)
  for (const [k, v] of Object.entries(p)) {
    if (!(PERMISSION_NAMES as readonly string[]).includes(k)) throw new ApiError('INVALID_INPUT', `"permissions" has no bit ${JSON.stringify(k)}: the bits are ${PERMISSION_NAMES.join(', ')}`)
    if (typeof v !== 'boolean') throw new ApiError('INVALID_INPUT', `"permissions"."${k}" must be true or false`)
  }
  const bits = { ...base, ...(p as Partial<Permissions>) }
  if (bits.can_share) throw new ApiError('INVALID_INPUT', '"can_share" cannot be granted here: a share link would outlive the gateway user it came from')
  return bits
}

function password(v: unknown): string {
  if (typeof v !== 'string' || v.length < 8 || v.length > 1024) throw new ApiError('INVALID_INPUT', '"password" must be 8 to 1024 characters')
  return v
}

/** Where gateway users may be served from (front/gateway-login.ts implements it). */
export interface GatewayUserTargets {
  /** The connection labels a user may map to. */
  labels(): readonly string[]
  /** @throws ApiError INVALID_INPUT when such a user could not be served (e.g. the connection has no fixed credentials) */
  check(user: Pick<GatewayUserRecord, 'name' | 'connection' | 'root' | 'created'>): void
  /** Cleans up after a removed user (its tmp space, its logins). */
  removed(user: GatewayUserRecord): Promise<void>
  /** The user's password, keys or permission bits changed: its logins that it no longer grants end. */
  changed(name: string): Promise<void>
}

export interface AuthorizedKeyView {
  readonly fingerprint: string
  readonly type: string
  readonly comment: string
  readonly created: number
}

export interface GatewayUserView {
  readonly name: string
  readonly connection: string
  readonly root: string
  readonly permissions: Permissions
  /** True when the user may change nothing (the shorthand, kept for clients of before the bits). */
  readonly read_only: boolean
  readonly has_password: boolean
  readonly keys: readonly AuthorizedKeyView[]
  readonly created: number
}

const keyView = (k: AuthorizedKeyRecord): AuthorizedKeyView => ({ fingerprint: k.fingerprint, type: k.type, comment: k.comment, created: k.created })

export const userView = (u: GatewayUserRecord): GatewayUserView => ({
  name: u.name,
  connection: u.connection,
  root: u.root,
  permissions: u.permissions,
  read_only: changesNothing(u.permissions),
  has_password: u.password_hash !== null,
  keys: u.keys.map(keyView),
  created: u.created,
})
