/**
 * @module front/oauth/authorize
 * /authorize (RFC 6749 §4.1, OAuth 2.1): GET checks the request and shows the login
 * page; each POST is one step of it: a login (a configured connection with its
 * credentials, a gateway user, a tmp user id), then the consent, whose answer
 * redirects back to the client with a code or `error=access_denied`.
 *
 * Errors before the client and its redirect URI are trusted are shown on the page,
 * never redirected (RFC 6749 §4.1.2.1). A request's errors go back to the redirect URI
 * with `error` and the client's `state` only for a client of the configuration: anyone
 * may register a client with any redirect URI, so redirecting its errors without the
 * user's say would make /authorize an open redirector (RFC 9700 §4.11.2); a registered
 * client's errors are shown on the page. The user's own "deny" goes back to every client. The steps carry their state in a sealed `flow`
 * field (the request, then the login's grant) bound to a cookie of this browser, so a
 * form posted from elsewhere, or a flow copied to another browser, is refused (CSRF);
 * a POST whose Origin is not this server's is refused too.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto'
import { ApiError, toApiError } from '../../core/api-error.js'
import type { Config } from '../../core/config.js'
import type { HttpReply, HttpRequest } from '../../core/http.js'
import { matchRedirectUri } from '../../core/redirect-uris.js'
import { TokenError, seal, unseal } from '../../core/token.js'
import { HTTP_STATUS } from '../http/status.js'
import { subkey } from '../subkey.js'
import type { OAuthClients } from './clients.js'
import type { AuthorizationCodes } from './codes.js'
import { FormError, cookie, params, readForm } from './form.js'
import { type Grant, type Grants, LoginError } from './grants.js'
import { type LoginChoices, consentPage, errorPage, loginPage } from './page.js'
import { CHALLENGE } from './pkce.js'
import { MCP_PATH, canonicalResource } from './urls.js'

/** An authorization request, checked. */
interface AuthRequest {
  readonly client_id: string
  readonly client_name: string
  readonly redirect_uri: string
  readonly redirect_given: boolean
  readonly challenge: string
  readonly state: string | null
  readonly resource: string
}

interface Flow {
  readonly v: 1
  readonly t: 'oauth-flow'
  readonly csrf: string
  readonly exp: number
  readonly req: AuthRequest
  readonly grant?: Grant
  readonly account?: string
}

/** How long the page's steps may take, from the first GET. */
const FLOW_MS = 15 * 60_000
const COOKIE = 'filegate_oauth'
const CSRF = /^[A-Za-z0-9_-]{43}$/
/** The client's `state` travels in the page's sealed flow: bounded. */
const MAX_STATE = 1024

export interface AuthorizeDeps {
  readonly config: Config
  readonly issuer: () => string
  readonly secret: Buffer
  readonly clients: OAuthClients
  readonly codes: AuthorizationCodes
  readonly grants: Grants
}

export class Authorize {
  readonly #deps: AuthorizeDeps
  readonly #key: Buffer
  readonly #choices: LoginChoices

  constructor(deps: AuthorizeDeps) {
    this.#deps = deps
    this.#key = subkey(deps.secret, 'oauth-flow')
    this.#choices = { connections: deps.config.connections.map((c) => ({ label: c.label, type: c.type })), tmp: deps.config.tmp_sessions }
  }

  /** GET /authorize: the request checked, then the login page. */
  async get(req: HttpRequest): Promise<HttpReply> {
    let q: Map<string, string>
    try {
      q = params(req.query)
    } catch (err) {
      if (err instanceof FormError) return errorPage(400, err.message)
      throw err
    }
    const checked = await this.#check(q)
    if ('page' in checked) return checked.page
    if ('redirect' in checked) return checked.redirect
    const existing = cookie(req, COOKIE)
    const csrf = existing && CSRF.test(existing) ? existing : randomBytes(32).toString('base64url')
    const secure = this.#deps.issuer().startsWith('https:') ? '; Secure' : ''
    return loginPage({
      clientName: checked.req.client_name,
      redirectUri: checked.req.redirect_uri,
      flow: this.#seal({ v: 1, t: 'oauth-flow', csrf, exp: Date.now() + FLOW_MS, req: checked.req }),
      choices: this.#choices,
      cookie: `${COOKIE}=${csrf}; Path=/authorize; HttpOnly; SameSite=Strict; Max-Age=${FLOW_MS / 1000}${secure}`,
    })
  }

  async #check(q: Map<string, string>): Promise<{ req: AuthRequest } | { page: HttpReply } | { redirect: HttpReply }> {
    const client_id = q.get('client_id')
    if (!client_id) return { page: errorPage(400, 'the request has no client_id') }
    const client = await this.#deps.clients.get(client_id)
    if (!client) return { page: errorPage(400, `unknown client ${JSON.stringify(client_id.slice(0, 100))}`) }
    const given = q.get('redirect_uri')
    let redirect_uri: string
    if (given === undefined) {
      if (client.redirect_uris.length !== 1) return { page: errorPage(400, 'the request has no redirect_uri, and the client has several') }
      redirect_uri = client.redirect_uris[0]!
    } else {
      const m = matchRedirectUri(client.redirect_uris, given)
      if (m === null) return { page: errorPage(400, `the redirect_uri ${JSON.stringify(given.slice(0, 300))} is not one this client registered`) }
      redirect_uri = m
    }
    // From here on the redirect URI is one the client registered; only the operator's own clients are trusted with error redirects.
    const state = q.get('state') ?? null
    const fail = (error: string, description: string) =>
      client.configured
        ? { redirect: redirectTo(redirect_uri, { error, error_description: description, state: state && state.slice(0, MAX_STATE), iss: this.#deps.issuer() }) }
        : { page: errorPage(400, `${description} (${error})`) }
    if (state !== null && state.length > MAX_STATE) return fail('invalid_request', `state must be at most ${MAX_STATE} characters`)
    if (q.get('response_type') !== 'code') return fail('unsupported_response_type', 'response_type must be "code"')
    const challenge = q.get('code_challenge')
    if (challenge === undefined) return fail('invalid_request', 'PKCE is required: send code_challenge and code_challenge_method=S256')
    if (q.get('code_challenge_method') !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256 (plain is not accepted)')
    if (!CHALLENGE.test(challenge)) return fail('invalid_request', 'code_challenge must be the base64url SHA-256 of the verifier (43 characters)')
    const issuer = this.#deps.issuer()
    const asked = q.get('resource')
    const resource = asked === undefined ? issuer + MCP_PATH : canonicalResource(issuer, asked)
    if (resource === null) return fail('invalid_target', `the resource must be this server's MCP endpoint, ${issuer}${MCP_PATH}`)
    return { req: { client_id, client_name: client.name, redirect_uri, redirect_given: given !== undefined, challenge, state, resource } }
  }

  /** POST /authorize: one step of the page. */
  async post(req: HttpRequest): Promise<HttpReply> {
    const origin = req.header('origin')
    if (origin !== undefined && origin !== new URL(this.#deps.issuer()).origin) return errorPage(403, 'this form was sent from another site')
    let form: Map<string, string>
    try {
      form = await readForm(req)
    } catch (err) {
      if (err instanceof FormError) return errorPage(400, err.message)
      throw err
    }
    const flow = this.#open(form.get('flow'))
    const csrf = cookie(req, COOKIE)
    if (!flow || flow.exp <= Date.now()) return errorPage(400, 'this page has expired: start again from the application')
    if (!csrf || !same(csrf, flow.csrf)) return errorPage(403, 'this form does not belong to this browser: start again from the application')
    const action = form.get('action')
    const common = { clientName: flow.req.client_name, redirectUri: flow.req.redirect_uri }
    if (action === 'allow' || action === 'deny') {
      if (!flow.grant) return errorPage(400, 'log in first')
      const r = flow.req
      if (action === 'deny') return redirectTo(r.redirect_uri, { error: 'access_denied', error_description: 'the user denied access', state: r.state, iss: this.#deps.issuer() })
      const code = await this.#deps.codes.issue({ client_id: r.client_id, redirect_uri: r.redirect_uri, redirect_given: r.redirect_given, challenge: r.challenge, resource: r.resource, grant: flow.grant })
      return redirectTo(r.redirect_uri, { code, state: r.state, iss: this.#deps.issuer() })
    }
    let login: { grant: Grant; account: string }
    try {
      login = await this.#login(action, form, req)
    } catch (err) {
      // What the login said (wrong password, throttled, storage unreachable...), on the page,
      // in the HTTP API's words (a backend's refusal comes as an FsError).
      const said = err instanceof LoginError ? err : toApiError(err)
      if (said instanceof ApiError && said.code === 'INTERNAL') throw err
      const status = said instanceof LoginError ? said.status : HTTP_STATUS[said.code]
      return loginPage({ ...common, flow: form.get('flow')!, choices: this.#choices, error: said.message, status })
    }
    return consentPage({ ...common, account: login.account, flow: this.#seal({ ...flow, grant: login.grant, account: login.account }) })
  }

  async #login(action: string | undefined, form: Map<string, string>, req: HttpRequest): Promise<{ grant: Grant; account: string }> {
    const { grants, config } = this.#deps
    const username = form.get('username') ?? ''
    const password = form.get('password') ?? ''
    switch (action) {
      case 'connection': {
        const label = form.get('label') ?? ''
        const conn = config.connections.find((c) => c.label === label)
        if (!conn) throw new LoginError(`no connection is labelled ${JSON.stringify(label)}`, 400)
        const creds = conn.type === 'local' ? { password } : conn.type === 's3' ? { access_key_id: username, secret_access_key: password } : { username, password }
        const grant = await grants.session({ label, ...creds }, req.requestId, req.remoteAddress)
        return { grant, account: conn.type === 'local' || username === '' ? `connection ${label}` : `${username} on ${label}` }
      }
      case 'tmp': {
        const userID = form.get('userID') ?? ''
        return { grant: await grants.session({ type: 'tmp', userID }, req.requestId, req.remoteAddress), account: `tmp user ${userID}` }
      }
      case 'gateway': {
        const user = form.get('user') ?? ''
        return { grant: await grants.gatewayUser(user, password, req.requestId, req.remoteAddress), account: `gateway user ${user}` }
      }
      default:
        throw new LoginError('unknown step', 400)
    }
  }

  #seal(flow: Flow): string {
    return seal(flow, this.#key)
  }

  #open(sealed: string | undefined): Flow | null {
    if (sealed === undefined) return null
    try {
      const f = unseal(sealed, this.#key) as Flow
      return f?.v === 1 && f.t === 'oauth-flow' ? f : null
    } catch (err) {
      if (err instanceof TokenError) return null
      throw err
    }
  }
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.byteLength === y.byteLength && timingSafeEqual(x, y)
}

/** 303 to the client's redirect URI with `fields` added to its query (null ones left out). */
function redirectTo(uri: string, fields: Record<string, string | null>): HttpReply {
  const u = new URL(uri)
  for (const [k, v] of Object.entries(fields)) if (v !== null) u.searchParams.set(k, v)
  return { status: 303, headers: { location: u.href, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' } }
}
