/**
 * @module front/admin
 * The admin's credential (docs/api.md, "Admin API"): the password from the
 * config or FILEGATE_ADMIN_PASSWORD, kept only as a scrypt hash once started;
 * admin tokens sealed under a key derived for that purpose alone (front/subkey.ts),
 * so a user's session token can never pass as an admin token, nor the reverse.
 * Logins are throttled per address; admin tokens can be revoked (log out); gateway
 * users are validated here.
 */
import { randomBytes } from 'node:crypto'
import { ApiError } from '../core/api-error.js'
import { parseClientPath } from '../core/paths.js'
import type { GatewayUserRecord, StateStore } from '../core/state.js'
import { TokenError, seal, unseal } from '../core/token.js'
import { checkPassword, hashPassword } from './passwords.js'
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
  readonly #throttle = new Throttle({ max: MAX_FAILURES, windowMs: WINDOW_MS, what: 'admin logins' })

  private constructor(hash: string | null, secret: Buffer, state: StateStore) {
    this.#hash = hash
    this.#key = subkey(secret, 'admin-token')
    this.#state = state
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
  async addUser(body: unknown, connections: readonly string[]): Promise<GatewayUserView> {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new ApiError('INVALID_INPUT', 'the body must be a JSON object')
    const b = body as Record<string, unknown>
    if (typeof b.name !== 'string' || !/^[A-Za-z0-9._-]{1,64}$/.test(b.name)) throw new ApiError('INVALID_INPUT', '"name" must be 1 to 64 characters of A-Z, a-z, 0-9, ".", "_" or "-"')
    if (typeof b.password !== 'string' || b.password.length < 8 || b.password.length > 1024) throw new ApiError('INVALID_INPUT', '"password" must be 8 to 1024 characters')
    if (typeof b.connection !== 'string' || !connections.includes(b.connection)) {
      throw new ApiError('INVALID_INPUT', `"connection" must be one of: ${connections.join(', ')}`)
    }
    const root = parseClientPath(typeof b.root === 'string' ? b.root : '/', 'root').path
    if (b.read_only !== undefined && typeof b.read_only !== 'boolean') throw new ApiError('INVALID_INPUT', '"read_only" must be true or false')
    const user: GatewayUserRecord = {
      name: b.name,
      password_hash: await hashPassword(b.password),
      connection: b.connection,
      root,
      read_only: b.read_only === true,
      created: Date.now(),
    }
    if (!(await this.#state.addGatewayUser(user))) throw new ApiError('CONFLICT', `a gateway user "${b.name}" exists already`)
    return userView(user)
  }
}

export interface GatewayUserView {
  readonly name: string
  readonly connection: string
  readonly root: string
  readonly read_only: boolean
  readonly created: number
}

export const userView = (u: GatewayUserRecord): GatewayUserView => ({ name: u.name, connection: u.connection, root: u.root, read_only: u.read_only, created: u.created })
