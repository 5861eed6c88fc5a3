/**
 * @module core/state/oauth-clients
 * OAuth clients registered dynamically (front/oauth/, docs/mcp-auth.md). Part of the state
 * store (core/state.ts).
 */

/** An OAuth client (docs/mcp-auth.md): registered dynamically (RFC 7591). Public clients only: no secret. */
export interface OAuthClientRecord {
  readonly client_id: string
  /** Client-supplied: shown escaped, never trusted. */
  readonly name: string
  readonly redirect_uris: readonly string[]
  readonly created: number
  /** When a token was last issued to it; null: never (such clients are purged after a day). */
  readonly last_used: number | null
}

export interface OAuthClientStore {
  putOAuthClient(client: OAuthClientRecord): Promise<void>
  getOAuthClient(id: string): Promise<OAuthClientRecord | null>
  countOAuthClients(): Promise<number>
  /** Records that a token was issued to the client. */
  touchOAuthClient(id: string, atMs: number): Promise<void>
  /** Removes clients never used that were registered before `beforeMs`. @returns how many */
  purgeOAuthClients(beforeMs: number): Promise<number>
  /** Removes the `count` oldest clients never used (to make room for a new one). @returns how many */
  evictUnusedOAuthClients(count: number): Promise<number>
}
