/**
 * @module front/oauth/codes
 * Authorization codes (RFC 6749 §4.1.2): random, single-use, short-lived, bound to the
 * client, the redirect URI, the PKCE challenge and the resource of their request.
 * Kept in the state store, so a code issued by one node is exchanged at any other: the
 * code as a hash, its grant sealed under the server secret. Using a code names the
 * token family its exchange creates in the same atomic step, so a replay (at any
 * node, even while the first exchange is issuing its tokens) finds the family to
 * revoke. A used code is remembered a while past its expiry, to recognise a replay.
 */
import { createHash, randomBytes } from 'node:crypto'
import type { OAuthGrantStore } from '../../core/state.js'
import { seal, unseal } from '../../core/token.js'
import { subkey } from '../subkey.js'
import type { Grant } from './grants.js'
import { newFamily } from './tokens.js'

export interface CodeBinding {
  readonly client_id: string
  readonly redirect_uri: string
  /** Whether the authorization request named the redirect URI (then the token request must too). */
  readonly redirect_given: boolean
  readonly challenge: string
  readonly resource: string
  readonly grant: Grant
}

/** How long a used code is remembered past its expiry, to recognise a replay. */
const REPLAY_MEMORY_MS = 10 * 60_000
/** Expired codes are purged from the store at most this often. */
const PURGE_EVERY_MS = 60_000

/** A code taken: what it was bound to and the family its tokens must be issued in; or why not. */
export type Taken = { readonly ok: true; readonly code: CodeBinding; readonly family: string } | { readonly ok: false; readonly replayedFamily: string | null; readonly why: string }

const hash = (code: string) => createHash('sha256').update(code).digest('base64url')

export class AuthorizationCodes {
  readonly #state: OAuthGrantStore
  readonly #grantKey: Buffer
  readonly #ttlMs: number
  #purged = 0

  constructor(state: OAuthGrantStore, secret: Buffer, ttlMs: number) {
    this.#state = state
    this.#grantKey = subkey(secret, 'oauth-grant')
    this.#ttlMs = ttlMs
  }

  /** A new code. */
  async issue(b: CodeBinding): Promise<string> {
    const now = Date.now()
    if (now - this.#purged >= PURGE_EVERY_MS) {
      this.#purged = now
      await this.#state.purgeOAuthCodes(now - REPLAY_MEMORY_MS)
    }
    const code = randomBytes(32).toString('base64url')
    await this.#state.putOAuthCode({
      hash: hash(code),
      client_id: b.client_id,
      redirect_uri: b.redirect_uri,
      redirect_given: b.redirect_given,
      challenge: b.challenge,
      resource: b.resource,
      grant: seal(b.grant, this.#grantKey),
      expires: now + this.#ttlMs,
      used: null,
      family: null,
    })
    return code
  }

  /** Uses a code up: once only, before it expires. */
  async take(code: string): Promise<Taken> {
    const family = newFamily()
    const r = await this.#state.useOAuthCode(hash(code), family, Date.now())
    if (!r) return { ok: false, replayedFamily: null, why: 'unknown authorization code' }
    if (r.used !== null) return { ok: false, replayedFamily: r.family, why: 'the authorization code was already used: what it issued is revoked' }
    if (r.expires <= Date.now()) return { ok: false, replayedFamily: null, why: 'the authorization code has expired' }
    const binding: CodeBinding = {
      client_id: r.client_id,
      redirect_uri: r.redirect_uri,
      redirect_given: r.redirect_given,
      challenge: r.challenge,
      resource: r.resource,
      grant: unseal(r.grant, this.#grantKey) as Grant,
    }
    return { ok: true, code: binding, family }
  }
}
