/**
 * @module front/oauth/endpoints
 * The JSON endpoints of the authorization server: /token (RFC 6749 §3.2, the
 * authorization_code grant with PKCE and the refresh_token grant), /register
 * (RFC 7591) and /revoke (RFC 7009). Errors are RFC 6749 §5.2's JSON
 * (`{"error", "error_description"}`): 400, or 401 for `invalid_client`.
 */
import {
  AccessDeniedError,
  InvalidClientError,
  InvalidClientMetadataError,
  InvalidGrantError,
  InvalidRequestError,
  InvalidTargetError,
  OAuthError,
  TemporarilyUnavailableError,
  UnsupportedGrantTypeError,
} from '@modelcontextprotocol/sdk/server/auth/errors.js'
import { ApiError } from '../../core/api-error.js'
import type { HttpReply, HttpRequest } from '../../core/http.js'
import { readJson } from '../http/body.js'
import { jsonReply } from '../http/status.js'
import type { OAuthClient, OAuthClients } from './clients.js'
import type { AuthorizationCodes } from './codes.js'
import { FormError, readForm } from './form.js'
import type { Grants } from './grants.js'
import { verifierMatches } from './pkce.js'
import type { OAuthTokens } from './tokens.js'
import { canonicalResource } from './urls.js'

const STATUS: Readonly<Record<string, number>> = { invalid_client: 401, access_denied: 403, too_many_requests: 429, server_error: 500, temporarily_unavailable: 503 }
const NO_STORE = { pragma: 'no-cache' }

export function oauthErrorReply(err: OAuthError): HttpReply {
  return jsonReply(STATUS[err.errorCode] ?? 400, err.toResponseObject(), NO_STORE)
}

export interface EndpointDeps {
  readonly issuer: () => string
  readonly clients: OAuthClients
  readonly codes: AuthorizationCodes
  readonly tokens: OAuthTokens
  readonly grants: Grants
}

/** Runs an endpoint, answering OAuth errors in their JSON shape. */
async function answering(fn: () => Promise<HttpReply>): Promise<HttpReply> {
  try {
    return await fn()
  } catch (err) {
    if (err instanceof OAuthError) return oauthErrorReply(err)
    if (err instanceof FormError) return oauthErrorReply(new InvalidRequestError(err.message))
    // The state store away (or the server overloaded): to retry, not the client's request at fault.
    if (err instanceof ApiError && err.code === 'UNAVAILABLE') return oauthErrorReply(new TemporarilyUnavailableError(err.message))
    if (err instanceof ApiError && err.code !== 'INTERNAL') return oauthErrorReply(new InvalidRequestError(err.message))
    throw err
  }
}

/** The public client a form names by `client_id`. @throws InvalidClientError */
async function client(deps: EndpointDeps, form: Map<string, string>): Promise<OAuthClient> {
  const id = form.get('client_id')
  if (!id) throw new InvalidClientError('client_id is required (clients here are public: client_id alone authenticates them)')
  const c = await deps.clients.get(id)
  if (!c) throw new InvalidClientError('unknown client')
  return c
}

/** POST /token. */
export function token(deps: EndpointDeps): (req: HttpRequest) => Promise<HttpReply> {
  return (req) =>
    answering(async () => {
      const form = await readForm(req)
      const c = await client(deps, form)
      const asked = form.get('resource')
      const resource = asked === undefined ? undefined : canonicalResource(deps.issuer(), asked)
      if (resource === null) throw new InvalidTargetError(`unknown resource ${JSON.stringify(asked!.slice(0, 300))}`)
      const grantType = form.get('grant_type')
      let pair
      if (grantType === 'authorization_code') {
        const code = form.get('code')
        if (!code) throw new InvalidRequestError('code is required')
        const taken = await deps.codes.take(code)
        if (!taken.ok) {
          if (taken.replayedFamily !== null) await deps.tokens.revokeFamily(taken.replayedFamily)
          throw new InvalidGrantError(taken.why)
        }
        const b = taken.code
        if (b.client_id !== c.client_id) throw new InvalidGrantError('the authorization code was issued to another client')
        if ((b.redirect_given || form.has('redirect_uri')) && form.get('redirect_uri') !== b.redirect_uri) throw new InvalidGrantError('redirect_uri differs from the authorization request')
        const verifier = form.get('code_verifier')
        if (!verifier) throw new InvalidRequestError('code_verifier is required (PKCE)')
        if (!verifierMatches(verifier, b.challenge)) throw new InvalidGrantError('code_verifier does not match the code_challenge')
        if (resource !== undefined && resource !== b.resource) throw new InvalidTargetError(`the authorization code is for ${b.resource}`)
        // The code named its family when it was taken, before the tokens exist: a replay
        // arriving while they are issued revokes them too (RFC 6749 §4.1.2).
        pair = (await deps.tokens.issue(c.client_id, b.resource, b.grant, deps.grants.ends(b.grant), taken.family)).pair
      } else if (grantType === 'refresh_token') {
        const refresh = form.get('refresh_token')
        if (!refresh) throw new InvalidRequestError('refresh_token is required')
        pair = await deps.tokens.refresh(refresh, c.client_id, resource, (g) => deps.grants.live(g))
      } else {
        throw new UnsupportedGrantTypeError(grantType === undefined ? 'grant_type is required' : 'grant_type must be authorization_code or refresh_token')
      }
      await deps.clients.used(c.client_id)
      return jsonReply(200, pair, NO_STORE)
    })
}

/** POST /revoke: 200 whatever the token was (RFC 7009 §2.2). */
export function revoke(deps: EndpointDeps): (req: HttpRequest) => Promise<HttpReply> {
  return (req) =>
    answering(async () => {
      const form = await readForm(req)
      const c = await client(deps, form)
      const t = form.get('token')
      if (!t) throw new InvalidRequestError('token is required')
      await deps.tokens.revoke(t, c.client_id)
      return { status: 200, headers: { 'cache-control': 'no-store' } }
    })
}

/** POST /register. */
export function register(deps: EndpointDeps): (req: HttpRequest) => Promise<HttpReply> {
  return (req) =>
    answering(async () => {
      if (!deps.clients.registration) throw new AccessDeniedError('dynamic client registration is off on this server: ask its admin for a client id')
      let body: unknown
      try {
        body = await readJson(req, 16 * 1024)
      } catch (err) {
        if (err instanceof ApiError && err.code !== 'INTERNAL') throw new InvalidClientMetadataError(err.message)
        throw err
      }
      return jsonReply(201, await deps.clients.register(body, req.remoteAddress), NO_STORE)
    })
}

