/**
 * @module front/oauth/clients
 * OAuth clients (docs/mcp-auth.md, "Clients"): those of the configuration
 * (`oauth.clients`) and those registered at /register (RFC 7591), kept in the state
 * store. Every client is public (`token_endpoint_auth_method: none`): MCP clients are
 * native or browser apps that cannot keep a secret, and PKCE binds each code to the
 * app that asked for it. Registration is bounded: `registrations_per_hour` per network
 * (an IPv4 /24, an IPv6 /56: core/networks.ts), and `max_clients` in all. A full
 * table never closes registration to a real client: the clients that were never used
 * (no token was ever issued to them) make room, the oldest first, and clients never
 * used are forgotten after a day anyway. Only a table full of clients in use refuses.
 */
import { randomBytes } from 'node:crypto'
import { CustomOAuthError, InvalidClientMetadataError, TemporarilyUnavailableError, TooManyRequestsError } from '@modelcontextprotocol/sdk/server/auth/errors.js'
import { OAuthClientMetadataSchema } from '@modelcontextprotocol/sdk/shared/auth.js'
import { isApiError } from '../../core/api-error.js'
import { CONTROL } from '../../core/paths.js'
import type { OAuthConfig } from '../../core/config.js'
import { redirectUriProblem } from '../../core/redirect-uris.js'
import type { OAuthClientStore, ThrottleStore } from '../../core/state.js'
import { Throttle } from '../throttle.js'
import { networkOf } from '../../core/networks.js'

export interface OAuthClient {
  readonly client_id: string
  readonly name: string
  readonly redirect_uris: readonly string[]
  /** From the configuration (not client-supplied). */
  readonly configured: boolean
}

/** Registrations from one network per hour, by default (`oauth.registrations_per_hour`). */
export const REGISTRATIONS_PER_HOUR = 20
const MAX_REDIRECT_URIS = 10
const MAX_NAME = 200
const UNUSED_FOR_MS = 24 * 3600_000

const invalidRedirectUri = (message: string) => new CustomOAuthError('invalid_redirect_uri', message)

export class OAuthClients {
  readonly #state: OAuthClientStore & ThrottleStore
  readonly #config: OAuthConfig
  readonly #configured: ReadonlyMap<string, OAuthClient>
  readonly #throttle: Throttle

  constructor(state: OAuthClientStore & ThrottleStore, config: OAuthConfig) {
    this.#state = state
    this.#throttle = new Throttle({ state, max: config.registrations_per_hour, windowMs: 3600_000, what: 'client registrations' })
    this.#config = config
    this.#configured = new Map(config.clients.map((c) => [c.client_id, { ...c, configured: true }]))
  }

  async get(id: string): Promise<OAuthClient | null> {
    const c = this.#configured.get(id)
    if (c) return c
    if (!id.startsWith('fgc_')) return null
    const r = await this.#state.getOAuthClient(id)
    return r && { client_id: r.client_id, name: r.name, redirect_uris: r.redirect_uris, configured: false }
  }

  /** A token was issued to it: it is in use (never purged as unused). */
  async used(id: string): Promise<void> {
    if (!this.#configured.has(id)) await this.#state.touchOAuthClient(id, Date.now())
  }

  /**
   * POST /register: validates the client's metadata and registers it as a public
   * client. @returns the client information (RFC 7591 §3.2.1)
   * @throws OAuthError (invalid_redirect_uri, invalid_client_metadata, too_many_requests)
   */
  async register(body: unknown, address: string): Promise<Record<string, unknown>> {
    const parsed = OAuthClientMetadataSchema.safeParse(body)
    if (!parsed.success) {
      const uris = (body as { redirect_uris?: unknown } | null)?.redirect_uris
      if (Array.isArray(uris) && uris.some((u) => redirectUriProblem(u) !== null)) throw invalidRedirectUri(redirectUriProblem(uris.find((u) => redirectUriProblem(u) !== null))!)
      throw new InvalidClientMetadataError(parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '))
    }
    const m = parsed.data
    if (m.redirect_uris.length > MAX_REDIRECT_URIS) throw invalidRedirectUri(`at most ${MAX_REDIRECT_URIS} redirect URIs`)
    for (const u of m.redirect_uris) {
      const problem = redirectUriProblem(u)
      if (problem) throw invalidRedirectUri(problem)
    }
    const grants = m.grant_types ?? ['authorization_code', 'refresh_token']
    const unsupported = grants.find((g) => g !== 'authorization_code' && g !== 'refresh_token')
    if (unsupported) throw new InvalidClientMetadataError(`grant type "${unsupported}" is not supported (authorization_code, refresh_token)`)
    if (m.response_types && m.response_types.some((r) => r !== 'code')) throw new InvalidClientMetadataError('only the response type "code" is supported')
    const name = m.client_name ?? 'unnamed client'
    if (name.length > MAX_NAME) throw new InvalidClientMetadataError(`client_name must be at most ${MAX_NAME} characters`)
    if (CONTROL.test(name)) throw new InvalidClientMetadataError('client_name contains a control character')
    try {
      await this.#throttle.attempt('register', networkOf(address))
    } catch (err) {
      // The throttle speaks of failed attempts from an address; here every registration counts, by network.
      if (isApiError(err) && err.code === 'RATE_LIMITED') throw new TooManyRequestsError(err.message.replace(/failed client registrations from this address/, `client registrations from this network (${networkOf(address)})`))
      throw err
    }
    const max = this.#config.max_clients
    let count = await this.#state.countOAuthClients()
    if (count >= max) {
      count -= await this.#state.purgeOAuthClients(Date.now() - UNUSED_FOR_MS)
      if (count >= max) count -= await this.#state.evictUnusedOAuthClients(count - max + 1)
      if (count >= max) throw new TemporarilyUnavailableError('too many clients in use are registered: try again later')
    }
    const now = Date.now()
    const client_id = `fgc_${randomBytes(16).toString('base64url')}`
    await this.#state.putOAuthClient({ client_id, name, redirect_uris: m.redirect_uris, created: now, last_used: null })
    return {
      client_id,
      client_id_issued_at: Math.floor(now / 1000),
      client_name: name,
      redirect_uris: m.redirect_uris,
      grant_types: grants,
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }
  }

  get registration(): boolean {
    return this.#config.dynamic_registration
  }
}
