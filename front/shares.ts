/**
 * @module front/shares
 * Share links (docs/api.md): creation by a token session, listing and
 * removal by their owner (same backendID), and resolution of `?share=` into an
 * Access whose view is narrowed to the share's folder (or its one file) and rights.
 *
 * A share keeps its owner's backend spec sealed (AES-256-GCM, a key derived from
 * the server secret for this one purpose): it works while the owner is logged out,
 * on any node holding the secret, and the credentials are never returned.
 */
import { createHash, randomBytes } from 'node:crypto'
import { posix } from 'node:path'
import { ApiError } from '../core/api-error.js'
import { type BackendSpec, backendKey } from '../core/backend.js'
import type { HttpRequest } from '../core/http.js'
import { DOOR_PATH_RULES, baseName, trailingSlashOnFile } from '../core/paths.js'
import { refusal } from '../core/permissions.js'
import type { ShareRecord, ShareStore, ThrottleStore } from '../core/state.js'
import { seal, unseal } from '../core/token.js'
import type { View } from '../core/view.js'
import type { Access, OpenHttpView, Permissions } from './access.js'
import { MAX_PASSWORD_LENGTH, checkPassword, failureDelay, hashPassword } from './passwords.js'
import type { Session } from './sessions.js'
import { subkey } from './subkey.js'
import { Throttle } from './throttle.js'

interface Sealed {
  readonly spec: BackendSpec
  readonly key: string
}

/** What a client sees of a share: never the password hash or the sealed credentials. */
export interface ShareView {
  readonly id: string
  readonly path: string
  readonly type: 'file' | 'directory'
  readonly can_read: boolean
  readonly can_upload: boolean
  readonly can_write: boolean
  readonly expire: number | null
  readonly has_password: boolean
  readonly created: number
}

export const shareView = (s: ShareRecord): ShareView => ({
  id: s.id,
  path: s.path,
  type: s.kind,
  can_read: s.can_read,
  can_upload: s.can_upload,
  can_write: s.can_write,
  expire: s.expire,
  has_password: s.password_hash !== null,
  created: s.created,
})

/** A share's rights as the listing's permissions (docs/api.md, "Files"). */
export function sharePermissions(s: Pick<ShareRecord, 'can_read' | 'can_upload' | 'can_write'>): Permissions {
  const up = s.can_upload || s.can_write
  return {
    can_read: s.can_read || s.can_write,
    can_create_file: up,
    can_create_directory: up,
    can_upload: up,
    can_rename: s.can_write,
    can_move: s.can_write,
    can_delete: s.can_write,
    can_share: false,
  }
}

const SHARE_ID = /^[A-Za-z0-9_-]{16,64}$/
/** Wrong passwords for one share from one address within 15 minutes before 429. */
export const SHARE_PASSWORD_FAILURES = 20

export class ShareService {
  readonly #state: ShareStore & ThrottleStore
  readonly #key: Buffer
  readonly #openView: OpenHttpView
  /** Recently verified (share, password) pairs: scrypt on every request of a download burst would cost ~50 ms each. */
  readonly #verified = new Map<string, number>()
  /** Wrong passwords per (share, address): guessing is throttled, not just delayed. */
  readonly #throttle: Throttle

  constructor(opts: { state: ShareStore & ThrottleStore; secret: Buffer; openView: OpenHttpView }) {
    this.#state = opts.state
    this.#throttle = new Throttle({ state: opts.state, max: SHARE_PASSWORD_FAILURES, windowMs: 15 * 60_000, what: 'share passwords' })
    this.#key = subkey(opts.secret, 'share-credentials')
    this.#openView = opts.openView
  }

  /** POST /api/share, by `session` through `view` (its rights must include can_share). */
  async create(session: Session, view: View, body: unknown, requestId: string, signal: AbortSignal): Promise<ShareView> {
    mayShare(view)
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new ApiError('INVALID_INPUT', 'the body must be a JSON object with at least "path"')
    const b = body as Record<string, unknown>
    const { path, dirHint } = DOOR_PATH_RULES.http(typeof b.path === 'string' ? b.path : undefined, 'path')
    const right = (name: string, dflt: boolean): boolean => {
      const v = b[name]
      if (v === undefined || v === null) return dflt
      if (typeof v !== 'boolean') throw new ApiError('INVALID_INPUT', `"${name}" must be true or false`)
      return v
    }
    const can_read = right('can_read', true)
    const can_upload = right('can_upload', false)
    const can_write = right('can_write', false)
    if (!can_read && !can_upload && !can_write) throw new ApiError('INVALID_INPUT', 'a share needs at least one of can_read, can_upload, can_write')
    const password = b.password ?? null
    if (password !== null && (typeof password !== 'string' || password === '' || password.length > MAX_PASSWORD_LENGTH)) {
      throw new ApiError('INVALID_INPUT', `"password" must be null or a string of 1 to ${MAX_PASSWORD_LENGTH} characters`)
    }
    const expire = b.expire ?? null
    if (expire !== null && (typeof expire !== 'number' || !Number.isSafeInteger(expire) || expire <= Date.now())) {
      throw new ApiError('INVALID_INPUT', '"expire" must be null or a time in the future, in milliseconds since the epoch')
    }
    const entry = await view.stat({ requestId, signal }, path)
    if (dirHint && entry.kind === 'file') throw trailingSlashOnFile('path', path)
    const record: ShareRecord = {
      id: randomBytes(16).toString('base64url'), // 128 bits
      owner: session.backendID,
      path,
      kind: entry.kind === 'dir' ? 'directory' : 'file',
      can_read,
      can_upload,
      can_write,
      password_hash: password === null ? null : await hashPassword(password),
      expire: expire as number | null,
      sealed: seal({ spec: session.spec, key: session.key } satisfies Sealed, this.#key),
      created: Date.now(),
    }
    await this.#state.putShare(record)
    return shareView(record)
  }

  /** GET /api/share?path=: the owner's shares at or under `path`. */
  async list({ session, view }: Access, rawPath: string | null): Promise<ShareView[]> {
    mayShare(view)
    const { path } = DOOR_PATH_RULES.http(rawPath ?? '/', 'path')
    const under = (p: string) => path === '/' || p === path || p.startsWith(path + '/')
    return (await this.#state.listShares(session.backendID)).filter((s) => under(s.path)).map(shareView)
  }

  /** DELETE /api/share/<id>: the owner only. */
  async remove({ session, view }: Access, id: string): Promise<void> {
    mayShare(view)
    const s = SHARE_ID.test(id) ? await this.#state.getShare(id) : null
    if (!s) throw new ApiError('NOT_FOUND', 'no such share')
    if (s.owner !== session.backendID) throw new ApiError('FORBIDDEN', 'only the session that created a share may remove it')
    await this.#state.deleteShare(id)
  }

  /**
   * `?share=<id>`: the share as an Access, its view shown from the share's folder (a
   * file share: its one file) with the share's rights. Unknown 404, expired 410, password
   * missing or wrong 401 (after the fixed delay).
   */
  async resolve(id: string, req: HttpRequest): Promise<Access> {
    const s = SHARE_ID.test(id) ? await this.#state.getShare(id) : null
    if (!s) throw new ApiError('NOT_FOUND', 'no such share (it may have been removed)')
    if (s.expire !== null && s.expire <= Date.now()) throw new ApiError('GONE', 'this share has expired')
    if (s.password_hash !== null) await this.#checkPassword(s, sharePassword(req), req.remoteAddress)
    const sealed = unseal(s.sealed, this.#key) as Sealed
    const dir = s.kind === 'file' ? parentOf(s.path) : s.path
    const only = s.kind === 'file' ? baseName(s.path) : null
    let spec = sealed.spec
    let key = sealed.key
    let root = dir
    if (spec.type === 'local' && dir !== '/') {
      // On the server's disk the driver itself is rooted at the shared folder, so its
      // symlink containment holds at the share's edge, not the owner's: a link inside
      // the share that leads elsewhere in the owner's storage is refused like any other.
      spec = { type: 'local', root: posix.join(spec.root, dir) }
      key = backendKey(spec)
      root = '/'
    }
    const session: Session = { id: `share:${s.id}`, backendID: s.owner, home: '/', spec, key, expiresAt: s.expire ?? Number.MAX_SAFE_INTEGER }
    // can_upload alone creates, never replaces: the bits give can_delete with can_write only (docs/api.md, "Files").
    const view = await this.#openView({ spec, key, permissions: sharePermissions(s), root, only, login: `http\0${key}\0${session.id}` })
    return { session, view }
  }

  async #checkPassword(s: ShareRecord, password: string | undefined, address: string): Promise<void> {
    if (password === undefined) {
      await failureDelay()
      throw new ApiError('NOT_AUTHENTICATED', 'this share needs its password: send X-Share-Password (or HTTP Basic auth)')
    }
    const memo = `${s.id}\0${createHash('sha256').update(password).digest('base64url')}`
    const until = this.#verified.get(memo)
    if (until !== undefined && until > Date.now()) return
    await checkPassword({ throttle: this.#throttle, scope: s.id, address, password, hash: s.password_hash!, refused: 'wrong share password' })
    if (this.#verified.size >= 10_000) this.#verified.delete(this.#verified.keys().next().value!)
    this.#verified.set(memo, Date.now() + 60_000)
  }
}

/** X-Share-Password, or the password of HTTP Basic auth (any user name). */
function sharePassword(req: HttpRequest): string | undefined {
  const h = req.header('x-share-password')
  if (h !== undefined) return h
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(req.header('authorization') ?? '')
  if (!m) return undefined
  const text = Buffer.from(m[1]!, 'base64').toString('utf8')
  const colon = text.indexOf(':')
  return colon < 0 ? undefined : text.slice(colon + 1)
}

/** Share links are made, listed and removed by logins with can_share (token sessions; never a share link). */
function mayShare(view: View): void {
  if (!view.permissions.can_share) throw refusal('can_share')
}

const parentOf = (p: string): string => (p.lastIndexOf('/') <= 0 ? '/' : p.slice(0, p.lastIndexOf('/')))

