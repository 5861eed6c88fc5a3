/**
 * @module front/state/sqlite/migrations
 * The SQLite state store's schema (front/state/sqlite-state.ts) and its versioned
 * migrations: `schema_migrations` records each applied version; at open, every newer
 * migration runs in its own transaction, in order. Add a migration by appending to
 * MIGRATIONS, never by editing one that has shipped.
 */
import type Database from 'better-sqlite3'

const MIGRATIONS: readonly string[] = [
  // 1: revoked tokens, shares, API keys, gateway users.
  `CREATE TABLE revoked_tokens (id TEXT PRIMARY KEY, until_ms INTEGER NOT NULL);
   CREATE INDEX revoked_tokens_until ON revoked_tokens (until_ms);
   CREATE TABLE shares (
     id TEXT PRIMARY KEY, owner TEXT NOT NULL, path TEXT NOT NULL, kind TEXT NOT NULL,
     can_read INTEGER NOT NULL, can_upload INTEGER NOT NULL, can_write INTEGER NOT NULL,
     password_hash TEXT, expire_ms INTEGER, sealed TEXT NOT NULL, created_ms INTEGER NOT NULL);
   CREATE INDEX shares_owner ON shares (owner);
   CREATE TABLE api_keys (
     id TEXT PRIMARY KEY, name TEXT NOT NULL, hash TEXT NOT NULL UNIQUE, origins TEXT NOT NULL,
     created_ms INTEGER NOT NULL, last_used_ms INTEGER);
   CREATE TABLE gateway_users (
     name TEXT PRIMARY KEY, password_hash TEXT NOT NULL, connection TEXT NOT NULL, root TEXT NOT NULL,
     read_only INTEGER NOT NULL, created_ms INTEGER NOT NULL);`,
  // 2: gateway users' authorized public keys; a user's password becomes optional (key-only users).
  `CREATE TABLE gateway_users_2 (
     name TEXT PRIMARY KEY, password_hash TEXT, connection TEXT NOT NULL, root TEXT NOT NULL,
     read_only INTEGER NOT NULL, created_ms INTEGER NOT NULL);
   INSERT INTO gateway_users_2 SELECT name, password_hash, connection, root, read_only, created_ms FROM gateway_users;
   DROP TABLE gateway_users;
   ALTER TABLE gateway_users_2 RENAME TO gateway_users;
   CREATE TABLE gateway_user_keys (
     user TEXT NOT NULL, fingerprint TEXT NOT NULL, type TEXT NOT NULL, blob TEXT NOT NULL,
     comment TEXT NOT NULL, created_ms INTEGER NOT NULL, PRIMARY KEY (user, fingerprint));`,
  // 3: gateway users' S3 access keys (the secret sealed under the server secret).
  `CREATE TABLE s3_keys (
     id TEXT PRIMARY KEY, user TEXT NOT NULL, sealed TEXT NOT NULL, created_ms INTEGER NOT NULL, last_used_ms INTEGER);
   CREATE INDEX s3_keys_user ON s3_keys (user);`,
  // 4: the S3 gateway's object metadata (where the storage keeps none) and multipart uploads.
  `CREATE TABLE s3_object_meta (
     storage TEXT NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL, mtime_ms INTEGER,
     etag TEXT NOT NULL, content_type TEXT, user_meta TEXT NOT NULL, PRIMARY KEY (storage, path));
   CREATE TABLE s3_multipart_uploads (
     id TEXT PRIMARY KEY, user TEXT NOT NULL, bucket TEXT NOT NULL, key TEXT NOT NULL,
     created_ms INTEGER NOT NULL, content_type TEXT, user_meta TEXT NOT NULL, completed_etag TEXT);
   CREATE INDEX s3_multipart_uploads_user ON s3_multipart_uploads (user, bucket, key);
   CREATE INDEX s3_multipart_uploads_created ON s3_multipart_uploads (created_ms);
   CREATE TABLE s3_multipart_parts (
     upload_id TEXT NOT NULL, number INTEGER NOT NULL, size INTEGER NOT NULL, etag TEXT NOT NULL,
     file TEXT NOT NULL, modified_ms INTEGER NOT NULL, PRIMARY KEY (upload_id, number));`,
  // 5: OAuth clients (dynamic registration) and refresh tokens (front/oauth/).
  `CREATE TABLE oauth_clients (
     client_id TEXT PRIMARY KEY, name TEXT NOT NULL, redirect_uris TEXT NOT NULL,
     created_ms INTEGER NOT NULL, last_used_ms INTEGER);
   CREATE TABLE oauth_refresh_tokens (
     hash TEXT PRIMARY KEY, family TEXT NOT NULL, client_id TEXT NOT NULL, resource TEXT NOT NULL,
     grant TEXT NOT NULL, expires_ms INTEGER NOT NULL, used_ms INTEGER);
   CREATE INDEX oauth_refresh_tokens_family ON oauth_refresh_tokens (family);
   CREATE INDEX oauth_refresh_tokens_expires ON oauth_refresh_tokens (expires_ms);`,
  // 6: what several nodes must share: login throttles, OAuth codes, MCP sessions, tus uploads.
  `CREATE TABLE login_throttles (key TEXT PRIMARY KEY, count INTEGER NOT NULL, since_ms INTEGER NOT NULL, until_ms INTEGER NOT NULL);
   CREATE INDEX login_throttles_until ON login_throttles (until_ms);
   CREATE TABLE oauth_codes (
     hash TEXT PRIMARY KEY, client_id TEXT NOT NULL, redirect_uri TEXT NOT NULL, redirect_given INTEGER NOT NULL,
     challenge TEXT NOT NULL, resource TEXT NOT NULL, sealed_grant TEXT NOT NULL, expires_ms INTEGER NOT NULL,
     used_ms INTEGER, family TEXT);
   CREATE INDEX oauth_codes_expires ON oauth_codes (expires_ms);
   CREATE TABLE mcp_sessions (
     hash TEXT PRIMARY KEY, owner TEXT NOT NULL, protocol_version TEXT NOT NULL, init TEXT NOT NULL,
     created_ms INTEGER NOT NULL, last_seen_ms INTEGER NOT NULL);
   CREATE INDEX mcp_sessions_last_seen ON mcp_sessions (last_seen_ms);
   CREATE TABLE tus_uploads (id TEXT PRIMARY KEY, upload TEXT NOT NULL, created_ms INTEGER NOT NULL);
   CREATE INDEX tus_uploads_created ON tus_uploads (created_ms);`,
  // 7: the eight permission bits of gateway users and S3 keys (core/permissions.ts `toBits`);
  // NULL: a user's from its read_only flag, a key's its user's.
  `ALTER TABLE gateway_users ADD COLUMN permissions INTEGER;
   ALTER TABLE s3_keys ADD COLUMN permissions INTEGER;`,
]

/** The schema version this build knows. */
export const SCHEMA_VERSION = MIGRATIONS.length

/** Brings the database to SCHEMA_VERSION; refuses one that a newer filegate migrated. */
export function migrate(db: Database.Database): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_ms INTEGER NOT NULL)')
  const row = db.prepare<[], { v: number | null }>('SELECT MAX(version) AS v FROM schema_migrations').get()
  const current = row?.v ?? 0
  if (current > MIGRATIONS.length) {
    throw new Error(`the state database is at schema version ${current}, newer than this filegate knows (${MIGRATIONS.length}): upgrade filegate`)
  }
  for (let v = current + 1; v <= MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v - 1]!)
      db.prepare('INSERT INTO schema_migrations (version, applied_ms) VALUES (?, ?)').run(v, Date.now())
    })()
  }
}
