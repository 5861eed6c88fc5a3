/**
 * @module front/oauth/tokens
 * Access and refresh tokens (docs/mcp-auth.md, "Tokens"):
 * - an access token is sealed (core/token.ts) under a key of its own (front/subkey.ts):
 *   its family, audience (the resource), client, expiry and the grant itself, so a
 *   request needs no lookup but one: whether its family was revoked;
 * - a refresh token is random, stored only as a hash with its family; each use rotates
 *   it (the old one is refused afterwards), and a rotated one used again revokes the
 *   whole family: the tokens of one login, access tokens included;
 * - revoking either (POST /revoke) revokes the family.
 */
import { createHash, randomBytes } from 'node:crypto'
import { InvalidGrantError, InvalidTargetError } from '@modelcontextprotocol/sdk/server/auth/errors.js'
import type { OAuthConfig } from '../../core/config.js'
import type { OAuthGrantStore, RevokedTokens } from '../../core/state.js'
import { TokenError, seal, unseal } from '../../core/token.js'
import { subkey } from '../subkey.js'
import type { Grant } from './grants.js'

export interface AccessClaims {
  readonly v: 1
  readonly t: 'oauth-access'
  readonly fam: string
  readonly aud: string
  readonly cid: string
  readonly exp: number
  readonly g: Grant
}

export interface TokenPair {
  readonly access_token: string
  readonly token_type: 'Bearer'
  readonly expires_in: number
  readonly refresh_token: string
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')
/** A login's family id (random, 96 bits). */
export const newFamily = (): string => randomBytes(12).toString('base64url')

/** The revocation list's id of a family (the store's revoked token ids). */
const revokedId = (family: string) => `oauth:${family}`

export class OAuthTokens {
  readonly #accessKey: Buffer
  readonly #grantKey: Buffer
  readonly #state: OAuthGrantStore & RevokedTokens
  readonly #config: OAuthConfig

  constructor(secret: Buffer, state: OAuthGrantStore & RevokedTokens, config: OAuthConfig) {
    this.#accessKey = subkey(secret, 'oauth-access')
    this.#grantKey = subkey(secret, 'oauth-grant')
    this.#state = state
    this.#config = config
  }

  /** A new login's tokens: a new family, ending at `ends` at the latest. */
  async issue(client_id: string, resource: string, grant: Grant, ends: number | null, family: string = newFamily()): Promise<{ pair: TokenPair; family: string }> {
    const end = Math.min(Date.now() + this.#config.refresh_token_seconds * 1000, ends ?? Infinity)
    const sealed = seal(grant, this.#grantKey)
    return { pair: await this.#pair(family, client_id, resource, grant, sealed, end), family }
  }

  async #pair(family: string, client_id: string, resource: string, grant: Grant, sealedGrant: string, end: number): Promise<TokenPair> {
    const now = Date.now()
    const exp = Math.min(now + this.#config.access_token_seconds * 1000, end)
    const claims: AccessClaims = { v: 1, t: 'oauth-access', fam: family, aud: resource, cid: client_id, exp, g: grant }
    const refresh = `fgr_${randomBytes(32).toString('base64url')}`
    await this.#state.putOAuthRefresh({ hash: sha256(refresh), family, client_id, resource, grant: sealedGrant, expires: end, used: null })
    return { access_token: seal(claims, this.#accessKey), token_type: 'Bearer', expires_in: Math.max(1, Math.round((exp - now) / 1000)), refresh_token: refresh }
  }

  /**
   * A refresh token exchanged for a new pair of the same family. `live` tells whether
   * the grant still opens something; `resource`, when the client names one, must be
   * the family's. @throws InvalidGrantError, InvalidTargetError
   */
  async refresh(token: string, client_id: string, resource: string | undefined, live: (g: Grant) => Promise<boolean>): Promise<TokenPair> {
    const r = await this.#state.useOAuthRefresh(sha256(token), Date.now())
    if (!r) throw new InvalidGrantError('unknown refresh token')
    if (r.client_id !== client_id) throw new InvalidGrantError('the refresh token was issued to another client')
    if (resource !== undefined && resource !== r.resource) throw new InvalidTargetError(`the refresh token is for ${r.resource}`)
    if (r.used !== null) {
      await this.revokeFamily(r.family, r.expires)
      throw new InvalidGrantError('the refresh token was already used: every token of this login is revoked')
    }
    if (r.expires <= Date.now()) throw new InvalidGrantError('the refresh token has expired: log in again')
    if (await this.familyRevoked(r.family)) throw new InvalidGrantError('the refresh token was revoked')
    const grant = unseal(r.grant, this.#grantKey) as Grant
    if (!(await live(grant))) {
      await this.revokeFamily(r.family, r.expires)
      throw new InvalidGrantError('the login behind this refresh token has ended: log in again')
    }
    return this.#pair(r.family, client_id, r.resource, grant, r.grant, r.expires)
  }

  /** The claims of one of our access tokens; undefined when it is not one (another kind of token). */
  read(token: string): AccessClaims | undefined {
    try {
      const c = unseal(token, this.#accessKey) as AccessClaims
      return c?.v === 1 && c.t === 'oauth-access' ? c : undefined
    } catch (err) {
      if (err instanceof TokenError) return undefined
      throw err
    }
  }

  familyRevoked(family: string): Promise<boolean> {
    return this.#state.isTokenRevoked(revokedId(family))
  }

  /**
   * Revokes a family until `until` (its end; by default the longest a family lives):
   * its refresh tokens are deleted, its access tokens refused.
   */
  async revokeFamily(family: string, until = Date.now() + this.#config.refresh_token_seconds * 1000): Promise<void> {
    await this.#state.revokeToken(revokedId(family), until)
    await this.#state.deleteOAuthFamily(family)
  }

  /**
   * POST /revoke (RFC 7009): an access or refresh token of `client_id` revokes its
   * family; anything else (unknown, another client's) changes nothing.
   */
  async revoke(token: string, client_id: string): Promise<void> {
    const claims = this.read(token)
    if (claims) {
      if (claims.cid === client_id) await this.revokeFamily(claims.fam)
      return
    }
    const r = await this.#state.getOAuthRefresh(sha256(token))
    if (r && r.client_id === client_id) await this.revokeFamily(r.family, r.expires)
  }
}
