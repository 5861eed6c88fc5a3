/**
 * @module core/state
 * The state store: what the service remembers between requests and restarts.
 * One small interface so an embedded store (a file, SQLite) and a shared one
 * (PostgreSQL, for several nodes) are interchangeable. Later issues add shares,
 * API keys and gateway users here.
 */

export interface StateStore {
  /** Remembers a revoked token id until `untilMs` (its expiry): it is refused until then. */
  revokeToken(id: string, untilMs: number): Promise<void>
  isTokenRevoked(id: string): Promise<boolean>
  close(): Promise<void>
}
