/**
 * @module front/s3-keys
 * S3 access keys of gateway users (docs/s3-keys.md): made, listed, changed and revoked through
 * the admin API, looked up by the gateway logins (front/gateway-login.ts) on every
 * signed S3 request.
 *
 * A key is an access key id (20 characters of A-Z and 0-9, starting with `FG`) and a
 * secret access key (40 letters and digits). S3's Signature V4 is an HMAC made with the
 * secret, so the secret is needed in clear to check one: it is stored sealed under the
 * server secret (the same seal as `GatewayContext.seal('s3-secret', ...)`), shown once
 * at creation, never returned or logged afterwards.
 *
 * A lookup reads the key's record every time (a revoked key is refused at once, on
 * every node sharing the store); only the unsealing is remembered for a short while,
 * by sealed value. Uses are recorded at most once a minute per key.
 */
import { randomInt } from 'node:crypto'
import { ApiError } from '../core/api-error.js'
import type { Permissions } from '../core/permissions.js'
import { USER_DEFAULT, object, permissionsChange } from './admin.js'
import type { S3KeyRecord, StateStore } from '../core/state.js'
import { seal, unseal } from '../core/token.js'
import { subkey } from './subkey.js'

/** The seal's purpose, as a gateway would name it with `GatewayContext.seal`. */
export const S3_SECRET_PURPOSE = 'gateway:s3-secret'
export const ACCESS_KEY_ID = /^[A-Z0-9]{20}$/
/** Keys per user, at most. */
export const MAX_S3_KEYS = 100
const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'
const MIXED = `${UPPER}abcdefghijklmnopqrstuvwxyz`
/** Unsealed secrets are kept this long… */
const SECRET_CACHE_MS = 60_000
/** …for this many keys at most. */
const SECRET_CACHE_KEYS = 10_000
const TOUCH_EVERY_MS = 60_000

export interface S3KeyView {
  readonly access_key_id: string
  /** The bits this key narrows its user's to; null: the user's own. */
  readonly permissions: Permissions | null
  readonly created: number
  readonly last_used: number | null
}

export interface NewS3Key extends S3KeyView {
  readonly secret_access_key: string
}

/** A key found for a login: whose it is, and its secret in clear (never logged). */
export interface S3KeyFound {
  readonly id: string
  readonly user: string
  readonly secret: string
  /** The key's own bits (null: its user's), intersected with the user's at the login. */
  readonly permissions: Permissions | null
}

const noKey = (user: string, id: string) => new ApiError('NOT_FOUND', `"${user}" has no S3 key ${JSON.stringify(id)}`)

const random = (alphabet: string, n: number): string => Array.from({ length: n }, () => alphabet[randomInt(alphabet.length)]).join('')

export const s3KeyView = (k: S3KeyRecord): S3KeyView => ({ access_key_id: k.id, permissions: k.permissions, created: k.created, last_used: k.last_used })

export class S3Keys {
  readonly #state: StateStore
  readonly #key: Buffer
  /** Unsealed secrets by sealed value, least recently used first. */
  readonly #secrets = new Map<string, { readonly secret: string; readonly until: number }>()
  /** When each key's use was last written. */
  readonly #touched = new Map<string, number>()

  constructor(state: StateStore, serverSecret: Buffer) {
    this.#state = state
    this.#key = subkey(serverSecret, S3_SECRET_PURPOSE)
  }

  /**
   * POST /admin/api/users/<name>/s3-keys: the only time the secret is told. `permissions`
   * narrows what requests signed with the key may do (null: what its user may).
   */
  async create(user: string, permissions: Permissions | null = null): Promise<NewS3Key> {
    if ((await this.#state.listS3Keys(user)).length >= MAX_S3_KEYS) throw new ApiError('CONFLICT', `"${user}" has ${MAX_S3_KEYS} S3 keys already: revoke one first`)
    const secret = random(MIXED, 40)
    const record: S3KeyRecord = { id: `FG${random(UPPER, 18)}`, user, sealed: seal(secret, this.#key), permissions, created: Date.now(), last_used: null }
    if ((await this.#state.addS3Key(record)) === 'no-user') throw new ApiError('NOT_FOUND', 'no such gateway user')
    return { ...s3KeyView(record), secret_access_key: secret }
  }

  /** GET /admin/api/users/<name>/s3-keys. */
  async list(user: string): Promise<S3KeyView[]> {
    if (!(await this.#state.getGatewayUser(user))) throw new ApiError('NOT_FOUND', 'no such gateway user')
    return (await this.#state.listS3Keys(user)).map(s3KeyView)
  }

  /**
   * PATCH /admin/api/users/<name>/s3-keys/<id>: `{"permissions": {...}}` changes the bits
   * it names (a key with its user's bits starts from every bit but can_share), `null`
   * gives the key its user's bits again; `{"read_only": ...}` sets all eight by the
   * shorthand. Requests signed with the key have the new bits from the next one on.
   */
  async patch(user: string, id: string, body: unknown): Promise<S3KeyView> {
    const b = object(body)
    for (const k of Object.keys(b)) if (k !== 'permissions' && k !== 'read_only') throw new ApiError('INVALID_INPUT', `"${k}" is not a field of an S3 key that can change: give "permissions" or "read_only"`)
    if (Object.keys(b).length === 0) throw new ApiError('INVALID_INPUT', 'give "permissions" (the bits to change, or null: its user\'s) or "read_only"')
    const key = await this.#state.getS3Key(id)
    if (!key || key.user !== user) throw noKey(user, id)
    const permissions = b.permissions === null && b.read_only === undefined ? null : permissionsChange(b, key.permissions ?? USER_DEFAULT)!
    if (!(await this.#state.setS3KeyPermissions(user, id, permissions))) throw noKey(user, id)
    return s3KeyView({ ...key, permissions })
  }

  /** DELETE /admin/api/users/<name>/s3-keys/<id>: refused from the next request on. */
  async revoke(user: string, id: string): Promise<void> {
    if (!(await this.#state.deleteS3Key(user, id))) throw noKey(user, id)
  }

  /** The key `id` with its secret, or null when there is none (malformed ids are not looked up). */
  async find(id: string): Promise<S3KeyFound | null> {
    if (!ACCESS_KEY_ID.test(id)) return null
    const k = await this.#state.getS3Key(id)
    if (!k) return null
    const secret = this.#unseal(k.sealed)
    const now = Date.now()
    if ((this.#touched.get(id) ?? 0) + TOUCH_EVERY_MS <= now) {
      this.#touched.delete(id)
      this.#touched.set(id, now)
      if (this.#touched.size > SECRET_CACHE_KEYS) this.#touched.delete(this.#touched.keys().next().value!)
      void this.#state.touchS3Key(id, now).catch(() => {}) // best effort
    }
    return { id, user: k.user, secret, permissions: k.permissions }
  }

  #unseal(sealed: string): string {
    const now = Date.now()
    const hit = this.#secrets.get(sealed)
    this.#secrets.delete(sealed)
    if (hit && hit.until > now) {
      this.#secrets.set(sealed, hit) // most recently used
      return hit.secret
    }
    const secret = unseal(sealed, this.#key)
    if (typeof secret !== 'string') throw new Error('an S3 key record holds no sealed secret')
    this.#secrets.set(sealed, { secret, until: now + SECRET_CACHE_MS })
    if (this.#secrets.size > SECRET_CACHE_KEYS) this.#secrets.delete(this.#secrets.keys().next().value!)
    return secret
  }
}
