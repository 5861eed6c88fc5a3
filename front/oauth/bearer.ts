/**
 * @module front/oauth/bearer
 * The `chainBearers` resolver of filegate's OAuth access tokens (front/gateway-bearer.ts):
 * expired → `expired`; issued for another resource → `audience`; of a revoked family
 * → `invalid`; else what its grant opens. Tokens that are not ours are passed on.
 */
import type { BearerResolver } from '../gateway-bearer.js'
import type { Grants } from './grants.js'
import type { OAuthTokens } from './tokens.js'
import { canonicalResource } from './urls.js'

export function oauthBearer(tokens: OAuthTokens, grants: Grants, issuer: () => string): BearerResolver {
  return async (token, req) => {
    const c = tokens.read(token)
    if (!c) return undefined
    if (c.exp <= Date.now()) return { ok: false, reason: 'expired', message: 'the access token has expired: refresh it' }
    if (canonicalResource(issuer(), req.resource) !== c.aud) return { ok: false, reason: 'audience', message: `the access token was issued for ${c.aud}, not ${req.resource}` }
    if (await tokens.familyRevoked(c.fam)) return { ok: false, reason: 'invalid', message: 'the access token was revoked' }
    return grants.open(c.g, req)
  }
}
