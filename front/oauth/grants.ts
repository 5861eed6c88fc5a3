/**
 * @module front/oauth/grants
 * What a login on the authorization page grants, and what the grant opens when its
 * access token comes back (docs/mcp-auth.md, "What a token opens"):
 * - a configured connection logged into with its credentials, or a tmp user id: the
 *   filegate session `POST /api/session` would create (the same checks and the same
 *   throttle: SessionService does both), served exactly as that session;
 * - a gateway user (the admin's, door `mcp`): its connection, root and read-only flag,
 *   checked again at every use (a user removed, made anew, or whose password changed is
 *   refused).
 * Pass-through logins (`<user>@<connection>`) log in on their connection instead.
 */
import { ApiError } from '../../core/api-error.js'
import type { BearerResult } from '../../core/gateway.js'
import type { StateStore } from '../../core/state.js'
import type { BearerRequest, SessionBearerDeps } from '../gateway-bearer.js'
import { sessionGrant } from '../gateway-bearer.js'
import { SessionEnded } from '../sessions.js'
import { type GatewayLoginService, loginMark } from '../gateway-login.js'

/** Short keys: a grant travels sealed in every access token. */
export type Grant =
  /** A filegate session: its token (the bytes its base64url text encodes: half the size in a seal), and when it expires. */
  | { readonly k: 's'; readonly token: Uint8Array; readonly exp: number }
  /** A gateway user, as it was at the login (`loginMark`: made at the same time, the same password). */
  | { readonly k: 'g'; readonly user: string; readonly mark: string }

const bearer = (token: Uint8Array) => `Bearer ${Buffer.from(token).toString('base64url')}`

/** Why a login failed, shown on the page. */
export class LoginError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message)
  }
}

export interface GrantDeps extends SessionBearerDeps {
  readonly gatewayLogin: GatewayLoginService
  readonly state: StateStore
}

export class Grants {
  readonly #deps: GrantDeps

  constructor(deps: GrantDeps) {
    this.#deps = deps
  }

  /** A session of a configured connection or a tmp user, as POST /api/session makes it. @throws ApiError */
  async session(body: Record<string, unknown>, requestId: string, address: string): Promise<Grant> {
    const { session, token } = await this.#deps.sessions.create(body, requestId, address)
    return { k: 's', token: Buffer.from(token, 'base64url'), exp: session.expiresAt }
  }

  /** A gateway user's login at door `mcp`. @throws LoginError */
  async gatewayUser(user: string, password: string, requestId: string, address: string): Promise<Grant> {
    if (user.includes('@')) throw new LoginError(`"${user}" is a pass-through login: pick its connection under "Storage connection" and log in with that account there`, 400)
    const r = await this.#deps.gatewayLogin.login({ door: 'mcp', user, password, address, requestId })
    if (!r.ok) throw new LoginError(r.message, r.reason === 'throttled' ? 429 : r.reason === 'unavailable' ? 503 : 401)
    r.fs.close() // opened to check the storage; each request opens its own
    const record = await this.#deps.state.getGatewayUser(r.user)
    if (!record) throw new LoginError('this user was just removed', 401)
    return { k: 'g', user: r.user, mark: loginMark(record) }
  }

  /** When the grant ends anyway (a session's expiry); null: it does not by itself. */
  ends(grant: Grant): number | null {
    return grant.k === 's' ? grant.exp : null
  }

  /** Whether the grant still opens something (for a refresh): the session live, the user there. */
  async live(grant: Grant): Promise<boolean> {
    if (grant.k === 'g') {
      const user = await this.#deps.state.getGatewayUser(grant.user)
      return user !== null && loginMark(user) === grant.mark
    }
    try {
      await this.#deps.sessions.authenticate(bearer(grant.token))
      return true
    } catch (err) {
      if (err instanceof ApiError) return false
      throw err
    }
  }

  /** What an access token holding `grant` opens for one request. */
  async open(grant: Grant, req: BearerRequest): Promise<BearerResult> {
    if (grant.k === 'g') {
      let fs
      try {
        fs = await this.#deps.gatewayLogin.reopen(grant.user, grant.mark, { address: req.address, credential: `gateway:${grant.user}` })
      } catch {
        return { ok: false, reason: 'unavailable', message: 'the storage of this account cannot be reached now' }
      }
      if (!fs) return { ok: false, reason: 'invalid', message: 'the gateway user of this token was removed or its password changed' }
      return { ok: true, subject: `gateway:${grant.user}`, fs }
    }
    let session
    try {
      session = await this.#deps.sessions.authenticate(bearer(grant.token))
    } catch (err) {
      if (!(err instanceof ApiError)) throw err
      return { ok: false, reason: err instanceof SessionEnded && err.why === 'expired' ? 'expired' : 'invalid', message: `the login of this token has ended: ${err.message}` }
    }
    return sessionGrant(session, this.#deps, req)
  }
}
