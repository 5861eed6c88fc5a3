/**
 * @module front/oauth
 * filegate's OAuth 2.1 authorization server, for the MCP gateway (docs/mcp-auth.md):
 * discovery (RFC 8414, RFC 9728), client registration (RFC 7591) and pre-registered
 * clients, /authorize with its login page, /token (PKCE S256, rotated refresh tokens),
 * /revoke (RFC 7009), and the bearer resolver of its access tokens. The discovery
 * documents and the JSON endpoints are open to every browser origin (CORS without
 * credentials), as browser-based MCP clients need; the page is not.
 */
import type { Config } from '../../core/config.js'
import type { HttpHandler } from '../../core/http.js'
import type { StateStore } from '../../core/state.js'
import type { BearerResolver, SessionBearerDeps } from '../gateway-bearer.js'
import type { GatewayLoginService } from '../gateway-login.js'
import { jsonReply } from '../http/status.js'
import { Authorize } from './authorize.js'
import { oauthBearer } from './bearer.js'
import { OAuthClients } from './clients.js'
import { AuthorizationCodes } from './codes.js'
import { register, revoke, token } from './endpoints.js'
import { Grants } from './grants.js'
import { authorizationServerMetadata, protectedResourceMetadata } from './metadata.js'
import { OAuthTokens } from './tokens.js'
import { MCP_PATH } from './urls.js'

export interface OAuthDeps extends SessionBearerDeps {
  readonly config: Config
  readonly secret: Buffer
  readonly state: StateStore
  readonly gatewayLogin: GatewayLoginService
  /** The public origin (known once the API listens). */
  readonly issuer: () => string
}

export interface OAuthServer {
  /** Path → method → handler. */
  readonly routes: Readonly<Record<string, Readonly<Record<string, HttpHandler>>>>
  /** Paths open to every origin (CORS without credentials). */
  readonly openCors: ReadonlySet<string>
  readonly bearer: BearerResolver
}

const PRM = '/.well-known/oauth-protected-resource'

export function createOAuth(deps: OAuthDeps): OAuthServer {
  const { config, issuer } = deps
  const clients = new OAuthClients(deps.state, config.oauth)
  const codes = new AuthorizationCodes(deps.state, deps.secret, config.oauth.code_seconds * 1000)
  const tokens = new OAuthTokens(deps.secret, deps.state, config.oauth)
  const grants = new Grants(deps)
  const authorize = new Authorize({ config, issuer, secret: deps.secret, clients, codes, grants })
  const endpoints = { issuer, clients, codes, tokens, grants }
  const cacheable = { 'cache-control': 'public, max-age=300' }
  const resourceDoc = (path: string) => async () => jsonReply(200, protectedResourceMetadata(issuer(), issuer() + path), cacheable)
  const routes: Record<string, Record<string, HttpHandler>> = {
    '/.well-known/oauth-authorization-server': { GET: async () => jsonReply(200, authorizationServerMetadata(issuer(), config.oauth.dynamic_registration), cacheable) },
    [PRM]: { GET: resourceDoc(MCP_PATH) },
    [`${PRM}${MCP_PATH}`]: { GET: resourceDoc(MCP_PATH) },
    [`${PRM}/sse`]: { GET: resourceDoc('/sse') },
    '/authorize': { GET: (req) => authorize.get(req), POST: (req) => authorize.post(req) },
    '/token': { POST: token(endpoints) },
    '/revoke': { POST: revoke(endpoints) },
    '/register': { POST: register(endpoints) },
  }
  const openCors = new Set(Object.keys(routes).filter((p) => p !== '/authorize'))
  return { routes, openCors, bearer: oauthBearer(tokens, grants, issuer) }
}
