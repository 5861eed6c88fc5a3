/**
 * @module core/state/oauth-grants
 * What an OAuth login leaves behind: its authorization codes and refresh-token families
 * (front/oauth/). Part of the state store (core/state.ts).
 */

/**
 * An OAuth refresh token (docs/mcp-auth.md). The token itself is never stored, only
 * its hash. Every refresh token of one login is in one `family`: a rotated token
 * used again revokes the family.
 */
export interface OAuthRefreshRecord {
  /** Hex sha256 of the token. */
  readonly hash: string
  readonly family: string
  readonly client_id: string
  /** The resource (RFC 8707) its access tokens are for. */
  readonly resource: string
  /** What the login granted, sealed under the server secret. */
  readonly grant: string
  /** Epoch ms: the end of the family (refreshing does not extend it). */
  readonly expires: number
  /** When it was exchanged for a new pair; null: not yet. */
  readonly used: number | null
}

/**
 * An OAuth authorization code (docs/mcp-auth.md): single use, short-lived. The code
 * itself is never stored, only its hash; the grant is sealed under the server secret.
 */
export interface OAuthCodeRecord {
  /** Hash of the code (front/oauth/codes.ts). */
  readonly hash: string
  readonly client_id: string
  readonly redirect_uri: string
  /** Whether the authorization request named the redirect URI. */
  readonly redirect_given: boolean
  /** The PKCE challenge (S256). */
  readonly challenge: string
  readonly resource: string
  /** What the login granted, sealed under the server secret. */
  readonly grant: string
  /** Epoch ms after which it can no longer be exchanged. */
  readonly expires: number
  /** When it was exchanged; null: not yet. */
  readonly used: number | null
  /** The token family its exchange creates (revoked when the code is replayed); null: not exchanged. */
  readonly family: string | null
}

export interface OAuthGrantStore {
  putOAuthRefresh(token: OAuthRefreshRecord): Promise<void>
  getOAuthRefresh(hash: string): Promise<OAuthRefreshRecord | null>
  /**
   * Marks a refresh token used, atomically. @returns the record as it was before
   * (`used` null the first time), or null when there is no such token
   */
  useOAuthRefresh(hash: string, atMs: number): Promise<OAuthRefreshRecord | null>
  /** Removes every refresh token of a family (and expired ones of any family). */
  deleteOAuthFamily(family: string): Promise<void>

  putOAuthCode(code: OAuthCodeRecord): Promise<void>
  /**
   * Marks a code used by the exchange that creates `family`, atomically: only the
   * first call finds `used` null. @returns the record as it was before, or null when there is no such code
   */
  useOAuthCode(hash: string, family: string, atMs: number): Promise<OAuthCodeRecord | null>
  /** Removes codes that expired before `beforeMs`. @returns how many */
  purgeOAuthCodes(beforeMs: number): Promise<number>
}
