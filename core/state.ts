/**
 * @module core/state
 * The state store: what the service remembers between requests and restarts
 * (revoked tokens, share links, API keys, gateway users, login throttles, OAuth
 * codes, MCP sessions, resumable uploads): everything several nodes must share. One
 * interface per feature's records (core/state/*.ts), composed here, so an embedded
 * store (SQLite, front/state/sqlite-state.ts) and a shared one (PostgreSQL,
 * front/state/pg-state.ts, for several nodes) are interchangeable and a feature can
 * take only its part: every method is async, the records are plain data (times in
 * epoch ms), and nothing here names a database type.
 *
 * Secrets never reach the store in clear: passwords are scrypt hashes, API keys
 * sha256 hashes, a share's backend credentials and S3 secret keys are sealed under
 * the server secret.
 */
import type { RevokedTokens } from './state/tokens.js'
import type { ShareStore } from './state/shares.js'
import type { ApiKeyStore } from './state/api-keys.js'
import type { GatewayUserStore } from './state/gateway-users.js'
import type { S3KeyStore } from './state/s3-keys.js'
import type { ObjectMetaStore } from './state/s3-objects.js'
import type { MultipartStore } from './state/s3-multipart.js'
import type { OAuthClientStore } from './state/oauth-clients.js'
import type { OAuthGrantStore } from './state/oauth-grants.js'
import type { ThrottleStore } from './state/throttles.js'
import type { McpSessionStore } from './state/mcp-sessions.js'
import type { TusUploadStore } from './state/tus-uploads.js'

/** The records and each domain's part of the store. */
export type * from './state/tokens.js'
export type * from './state/shares.js'
export type * from './state/api-keys.js'
export type * from './state/gateway-users.js'
export type * from './state/s3-keys.js'
export type * from './state/s3-objects.js'
export type * from './state/s3-multipart.js'
export type * from './state/oauth-clients.js'
export type * from './state/oauth-grants.js'
export type * from './state/throttles.js'
export type * from './state/mcp-sessions.js'
export type * from './state/tus-uploads.js'

/**
 * The whole store: each feature's part (core/state/*.ts) over one database. A feature
 * that needs only its records can take its part's interface instead.
 */
export interface StateStore
  extends RevokedTokens,
    ShareStore,
    ApiKeyStore,
    GatewayUserStore,
    S3KeyStore,
    ObjectMetaStore,
    MultipartStore,
    OAuthClientStore,
    OAuthGrantStore,
    ThrottleStore,
    McpSessionStore,
    TusUploadStore {
  /** A shared store's connections to its server (for /metrics); absent on an embedded store. */
  connections?(): StoreConnections

  close(): Promise<void>
}

/** A shared store's pool of connections. */
export interface StoreConnections {
  /** Open, busy or idle. */
  readonly open: number
  readonly idle: number
  /** Queries waiting for a connection (the pool is at its size). */
  readonly waiting: number
}
