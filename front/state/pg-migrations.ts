/**
 * @module front/state/pg-migrations
 * The PostgreSQL state store's schema (front/state/pg-state.ts) and its versioned
 * migrations: `schema_migrations` records each applied version; at open, every newer
 * migration runs in its own transaction, in order, under an advisory lock so that
 * several nodes starting at once migrate once. Add a migration by appending to
 * MIGRATIONS, never by editing one that has shipped.
 *
 * Texts that are compared or ordered are `COLLATE "C"` (byte order, as SQLite
 * compares), times are epoch ms in `bigint`, JSON fields are `json` (kept as
 * written). A key's or user's dependent rows go with it (foreign keys, ON DELETE
 * CASCADE), so no row can outlive, or be added to, a removed owner.
 */
import type { PoolClient } from 'pg'

const MIGRATIONS: readonly string[] = [
  // 1: everything the SQLite store held at its version 5.
  `CREATE TABLE revoked_tokens (id text COLLATE "C" PRIMARY KEY, until_ms bigint NOT NULL);
   CREATE INDEX revoked_tokens_until ON revoked_tokens (until_ms);
   CREATE TABLE shares (
     id text COLLATE "C" PRIMARY KEY, owner text COLLATE "C" NOT NULL, path text NOT NULL, kind text NOT NULL,
     can_read boolean NOT NULL, can_upload boolean NOT NULL, can_write boolean NOT NULL,
     password_hash text, expire_ms bigint, sealed text NOT NULL, created_ms bigint NOT NULL);
   CREATE INDEX shares_owner ON shares (owner, created_ms);
   CREATE TABLE api_keys (
     id text COLLATE "C" PRIMARY KEY, name text NOT NULL, hash text COLLATE "C" NOT NULL UNIQUE, origins json NOT NULL,
     created_ms bigint NOT NULL, last_used_ms bigint);
   CREATE TABLE gateway_users (
     name text COLLATE "C" PRIMARY KEY, password_hash text, connection text NOT NULL, root text NOT NULL,
     read_only boolean NOT NULL, created_ms bigint NOT NULL);
   CREATE TABLE gateway_user_keys (
     seq bigint GENERATED ALWAYS AS IDENTITY,
     user_name text COLLATE "C" NOT NULL REFERENCES gateway_users (name) ON DELETE CASCADE,
     fingerprint text COLLATE "C" NOT NULL, type text NOT NULL, blob text NOT NULL,
     comment text NOT NULL, created_ms bigint NOT NULL, PRIMARY KEY (user_name, fingerprint));
   CREATE TABLE s3_keys (
     id text COLLATE "C" PRIMARY KEY, seq bigint GENERATED ALWAYS AS IDENTITY,
     user_name text COLLATE "C" NOT NULL REFERENCES gateway_users (name) ON DELETE CASCADE,
     sealed text NOT NULL, created_ms bigint NOT NULL, last_used_ms bigint);
   CREATE INDEX s3_keys_user ON s3_keys (user_name);
   CREATE TABLE s3_object_meta (
     storage text COLLATE "C" NOT NULL, path text COLLATE "C" NOT NULL, size bigint NOT NULL, mtime_ms bigint,
     etag text NOT NULL, content_type text, user_meta json NOT NULL, PRIMARY KEY (storage, path));
   CREATE TABLE s3_multipart_uploads (
     id text COLLATE "C" PRIMARY KEY, user_name text COLLATE "C" NOT NULL, bucket text COLLATE "C" NOT NULL,
     key text COLLATE "C" NOT NULL, created_ms bigint NOT NULL, content_type text, user_meta json NOT NULL,
     completed_etag text);
   CREATE INDEX s3_multipart_uploads_user ON s3_multipart_uploads (user_name, bucket, key);
   CREATE INDEX s3_multipart_uploads_created ON s3_multipart_uploads (created_ms);
   CREATE TABLE s3_multipart_parts (
     upload_id text COLLATE "C" NOT NULL REFERENCES s3_multipart_uploads (id) ON DELETE CASCADE,
     number integer NOT NULL, size bigint NOT NULL, etag text NOT NULL,
     file text NOT NULL, modified_ms bigint NOT NULL, PRIMARY KEY (upload_id, number));
   CREATE TABLE oauth_clients (
     client_id text COLLATE "C" PRIMARY KEY, name text NOT NULL, redirect_uris json NOT NULL,
     created_ms bigint NOT NULL, last_used_ms bigint);
   CREATE TABLE oauth_refresh_tokens (
     hash text COLLATE "C" PRIMARY KEY, family text COLLATE "C" NOT NULL, client_id text NOT NULL,
     resource text NOT NULL, grant_sealed text NOT NULL, expires_ms bigint NOT NULL, used_ms bigint);
   CREATE INDEX oauth_refresh_tokens_family ON oauth_refresh_tokens (family);
   CREATE INDEX oauth_refresh_tokens_expires ON oauth_refresh_tokens (expires_ms);`,
  // 2: what several nodes must share besides: login throttles, OAuth codes, MCP sessions, tus uploads.
  `CREATE TABLE login_throttles (key text COLLATE "C" PRIMARY KEY, count integer NOT NULL, since_ms bigint NOT NULL, until_ms bigint NOT NULL);
   CREATE INDEX login_throttles_until ON login_throttles (until_ms);
   CREATE TABLE oauth_codes (
     hash text COLLATE "C" PRIMARY KEY, client_id text NOT NULL, redirect_uri text NOT NULL, redirect_given boolean NOT NULL,
     challenge text NOT NULL, resource text NOT NULL, grant_sealed text NOT NULL, expires_ms bigint NOT NULL,
     used_ms bigint, family text);
   CREATE INDEX oauth_codes_expires ON oauth_codes (expires_ms);
   CREATE TABLE mcp_sessions (
     hash text COLLATE "C" PRIMARY KEY, owner text NOT NULL, protocol_version text NOT NULL, init text NOT NULL,
     created_ms bigint NOT NULL, last_seen_ms bigint NOT NULL);
   CREATE INDEX mcp_sessions_last_seen ON mcp_sessions (last_seen_ms);
   CREATE TABLE tus_uploads (id text COLLATE "C" PRIMARY KEY, upload text NOT NULL, created_ms bigint NOT NULL);
   CREATE INDEX tus_uploads_created ON tus_uploads (created_ms);`,
  // 3: the eight permission bits of gateway users and S3 keys (core/permissions.ts `toBits`);
  // NULL: a user's from its read_only flag, a key's its user's.
  `ALTER TABLE gateway_users ADD COLUMN permissions integer;
   ALTER TABLE s3_keys ADD COLUMN permissions integer;`,
]

/** The schema version this build knows. */
export const PG_SCHEMA_VERSION = MIGRATIONS.length

/** Any constant: the advisory lock the nodes of one database take around migrating. */
const MIGRATION_LOCK = 0x66696c65 // "file"

/** Brings the database to PG_SCHEMA_VERSION; refuses one newer than this build. */
export async function migratePg(client: PoolClient): Promise<void> {
  await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK])
  try {
    await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_ms bigint NOT NULL)')
    const { rows } = await client.query<{ v: number | null }>('SELECT max(version) AS v FROM schema_migrations')
    const current = rows[0]?.v ?? 0
    if (current > MIGRATIONS.length) {
      throw new Error(`the state database is at schema version ${current}, newer than this filegate knows (${MIGRATIONS.length}): upgrade filegate`)
    }
    for (let v = current + 1; v <= MIGRATIONS.length; v++) {
      await client.query('BEGIN')
      try {
        await client.query(MIGRATIONS[v - 1]!)
        await client.query('INSERT INTO schema_migrations (version, applied_ms) VALUES ($1, $2)', [v, Date.now()])
        await client.query('COMMIT')
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined)
        throw err
      }
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined)
  }
}
