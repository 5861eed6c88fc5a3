/**
 * @module front/oauth/codes
 * Authorization codes (RFC 6749 §4.1.2): random, single-use, short-lived, bound to the
 * client, the redirect URI, the PKCE challenge and the resource of their request.
 * Kept in memory (hashed) on the node that issued them: a code lives seconds. A used
 * code is remembered a while longer, so a replay is recognised and revokes what the
 * first exchange issued.
 */
import { createHash, randomBytes } from 'node:crypto'
import type { Grant } from './grants.js'

export interface CodeBinding {
  readonly client_id: string
  readonly redirect_uri: string
  /** Whether the authorization request named the redirect URI (then the token request must too). */
  readonly redirect_given: boolean
  readonly challenge: string
  readonly resource: string
  readonly grant: Grant
}

interface Entry extends CodeBinding {
  readonly expires: number
  used: boolean
  /** The token family its exchange created, to revoke on a replay. */
  family: string | null
}

/** Codes held at most (unexpired); more is refused until some expire. */
const MAX_CODES = 10_000
/** How long a used code is remembered past its expiry, to recognise a replay. */
const REPLAY_MEMORY_MS = 10 * 60_000

export type Taken = { readonly ok: true; readonly code: CodeBinding; readonly issued: (family: string) => void } | { readonly ok: false; readonly replayedFamily: string | null; readonly why: string }

const hash = (code: string) => createHash('sha256').update(code).digest('base64url')

export class AuthorizationCodes {
  readonly #ttlMs: number
  readonly #codes = new Map<string, Entry>()

  constructor(ttlMs: number) {
    this.#ttlMs = ttlMs
  }

  /** A new code, or null when too many are outstanding. */
  issue(binding: CodeBinding): string | null {
    this.#sweep()
    if (this.#codes.size >= MAX_CODES) return null
    const code = randomBytes(32).toString('base64url')
    this.#codes.set(hash(code), { ...binding, expires: Date.now() + this.#ttlMs, used: false, family: null })
    return code
  }

  /** Uses a code up: once only, before it expires. */
  take(code: string): Taken {
    const e = this.#codes.get(hash(code))
    if (!e) return { ok: false, replayedFamily: null, why: 'unknown authorization code' }
    if (e.used) return { ok: false, replayedFamily: e.family, why: 'the authorization code was already used: what it issued is revoked' }
    e.used = true
    if (e.expires <= Date.now()) return { ok: false, replayedFamily: null, why: 'the authorization code has expired' }
    return { ok: true, code: e, issued: (family) => void (e.family = family) }
  }

  #sweep(): void {
    const now = Date.now()
    for (const [k, e] of this.#codes) if (e.expires + (e.used ? REPLAY_MEMORY_MS : 0) <= now) this.#codes.delete(k)
  }
}
