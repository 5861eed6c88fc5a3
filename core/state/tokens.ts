/**
 * @module core/state/tokens
 * Revoked session tokens (front/sessions.ts): refused until they would have expired. Part of
 * the state store (core/state.ts).
 */

export interface RevokedTokens {
  /** Remembers a revoked token id until `untilMs` (its expiry): it is refused until then. */
  revokeToken(id: string, untilMs: number): Promise<void>
  isTokenRevoked(id: string): Promise<boolean>
}
