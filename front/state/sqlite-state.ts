/**
 * @module front/state/sqlite-state
 * The embedded state store: one SQLite database (`state.db`) in the data directory's
 * state folder, through better-sqlite3. Its calls are synchronous and short (indexed
 * single-row statements on a local file, WAL mode), so they run inline on the main
 * thread behind the async StateStore interface that a PostgreSQL store will share.
 *
 * Migrations: `schema_migrations` records each applied version; at open, every
 * newer migration runs in its own transaction, in order. Add a migration by
 * appending to MIGRATIONS, never by editing one that has shipped.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import type {
  ApiKeyRecord,
  AuthorizedKeyRecord,
  GatewayUserRecord,
  MultipartPartRecord,
  MultipartUploadRecord,
  ObjectMetaRecord,
  McpSessionRecord,
  OAuthClientRecord,
  OAuthCodeRecord,
  OAuthRefreshRecord,
  S3KeyRecord,
  ShareRecord,
  StateStore,
  ThrottleCount,
  TusUploadRecord,
} from '../../core/state.js'
import { changesNothing, fromBits, storedUserPermissions, toBits } from '../../core/permissions.js'

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

interface ShareRow {
  id: string
  owner: string
  path: string
  kind: string
  can_read: number
  can_upload: number
  can_write: number
  password_hash: string | null
  expire_ms: number | null
  sealed: string
  created_ms: number
}
interface KeyRow {
  id: string
  name: string
  hash: string
  origins: string
  created_ms: number
  last_used_ms: number | null
}
interface UserRow {
  name: string
  password_hash: string | null
  connection: string
  root: string
  read_only: number
  permissions: number | null
  created_ms: number
}
interface UserKeyRow {
  user: string
  fingerprint: string
  type: string
  blob: string
  comment: string
  created_ms: number
}
interface S3KeyRow {
  id: string
  user: string
  sealed: string
  permissions: number | null
  created_ms: number
  last_used_ms: number | null
}

interface ObjectMetaRow {
  storage: string
  path: string
  size: number
  mtime_ms: number | null
  etag: string
  content_type: string | null
  user_meta: string
}
interface UploadRow {
  id: string
  user: string
  bucket: string
  key: string
  created_ms: number
  content_type: string | null
  user_meta: string
  completed_etag: string | null
}
interface PartRow {
  upload_id: string
  number: number
  size: number
  etag: string
  file: string
  modified_ms: number
}

const toObjectMeta = (r: ObjectMetaRow): ObjectMetaRecord => ({ ...r, user_meta: JSON.parse(r.user_meta) as Record<string, string> })
const toUpload = ({ created_ms, user_meta, ...r }: UploadRow): MultipartUploadRecord => ({ ...r, created: created_ms, user_meta: JSON.parse(user_meta) as Record<string, string> })
const toPart = ({ modified_ms, ...r }: PartRow): MultipartPartRecord => ({ ...r, modified: modified_ms })

interface OAuthClientRow {
  client_id: string
  name: string
  redirect_uris: string
  created_ms: number
  last_used_ms: number | null
}
interface OAuthRefreshRow {
  hash: string
  family: string
  client_id: string
  resource: string
  grant: string
  expires_ms: number
  used_ms: number | null
}

const toOAuthClient = (r: OAuthClientRow): OAuthClientRecord => ({
  client_id: r.client_id,
  name: r.name,
  redirect_uris: JSON.parse(r.redirect_uris) as string[],
  created: r.created_ms,
  last_used: r.last_used_ms,
})
const toOAuthRefresh = (r: OAuthRefreshRow): OAuthRefreshRecord => ({
  hash: r.hash,
  family: r.family,
  client_id: r.client_id,
  resource: r.resource,
  grant: r.grant,
  expires: r.expires_ms,
  used: r.used_ms,
})

interface OAuthCodeRow {
  hash: string
  client_id: string
  redirect_uri: string
  redirect_given: number
  challenge: string
  resource: string
  sealed_grant: string
  expires_ms: number
  used_ms: number | null
  family: string | null
}
interface McpSessionRow {
  hash: string
  owner: string
  protocol_version: string
  init: string
  created_ms: number
  last_seen_ms: number
}
interface TusUploadRow {
  id: string
  upload: string
  created_ms: number
}

const toOAuthCode = (r: OAuthCodeRow): OAuthCodeRecord => ({
  hash: r.hash,
  client_id: r.client_id,
  redirect_uri: r.redirect_uri,
  redirect_given: r.redirect_given === 1,
  challenge: r.challenge,
  resource: r.resource,
  grant: r.sealed_grant,
  expires: r.expires_ms,
  used: r.used_ms,
  family: r.family,
})
const toMcpSession = ({ created_ms, last_seen_ms, ...r }: McpSessionRow): McpSessionRecord => ({ ...r, created: created_ms, last_seen: last_seen_ms })
const toTusUpload = (r: TusUploadRow): TusUploadRecord => ({ id: r.id, upload: r.upload, created: r.created_ms })

const toShare = (r: ShareRow): ShareRecord => ({
  id: r.id,
  owner: r.owner,
  path: r.path,
  kind: r.kind === 'file' ? 'file' : 'directory',
  can_read: r.can_read === 1,
  can_upload: r.can_upload === 1,
  can_write: r.can_write === 1,
  password_hash: r.password_hash,
  expire: r.expire_ms,
  sealed: r.sealed,
  created: r.created_ms,
})
const toKey = (r: KeyRow): ApiKeyRecord => ({
  id: r.id,
  name: r.name,
  hash: r.hash,
  origins: JSON.parse(r.origins) as string[],
  created: r.created_ms,
  last_used: r.last_used_ms,
})
const toUserKey = (r: UserKeyRow): AuthorizedKeyRecord => ({ fingerprint: r.fingerprint, type: r.type, blob: r.blob, comment: r.comment, created: r.created_ms })
const toUser = (r: UserRow, keys: readonly UserKeyRow[]): GatewayUserRecord => ({
  name: r.name,
  password_hash: r.password_hash,
  keys: keys.map(toUserKey),
  connection: r.connection,
  root: r.root,
  permissions: storedUserPermissions(r.permissions, r.read_only === 1),
  created: r.created_ms,
})
const toS3Key = (r: S3KeyRow): S3KeyRecord => ({
  id: r.id,
  user: r.user,
  sealed: r.sealed,
  permissions: r.permissions === null ? null : fromBits(r.permissions),
  created: r.created_ms,
  last_used: r.last_used_ms,
})

/** The schema version this build knows. */
export const SCHEMA_VERSION = MIGRATIONS.length

/** Opens (creating and migrating as needed) `<dir>/state.db`. */
export async function openSqliteState(dir: string): Promise<StateStore> {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const db = new Database(join(dir, 'state.db'))
  try {
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = NORMAL')
    db.pragma('busy_timeout = 5000')
    migrate(db)
  } catch (err) {
    db.close()
    throw err
  }
  const q = {
    revoke: db.prepare('INSERT OR REPLACE INTO revoked_tokens (id, until_ms) VALUES (?, ?)'),
    revoked: db.prepare<[string, number], { one: number }>('SELECT 1 AS one FROM revoked_tokens WHERE id = ? AND until_ms > ?'),
    purge: db.prepare('DELETE FROM revoked_tokens WHERE until_ms <= ?'),
    putShare: db.prepare(
      `INSERT OR REPLACE INTO shares (id, owner, path, kind, can_read, can_upload, can_write, password_hash, expire_ms, sealed, created_ms)
       VALUES (@id, @owner, @path, @kind, @can_read, @can_upload, @can_write, @password_hash, @expire_ms, @sealed, @created_ms)`,
    ),
    getShare: db.prepare<[string], ShareRow>('SELECT * FROM shares WHERE id = ?'),
    allShares: db.prepare<[], ShareRow>('SELECT * FROM shares ORDER BY created_ms DESC, id'),
    ownerShares: db.prepare<[string], ShareRow>('SELECT * FROM shares WHERE owner = ? ORDER BY created_ms DESC, id'),
    deleteShare: db.prepare('DELETE FROM shares WHERE id = ?'),
    putKey: db.prepare(
      `INSERT OR REPLACE INTO api_keys (id, name, hash, origins, created_ms, last_used_ms)
       VALUES (@id, @name, @hash, @origins, @created_ms, @last_used_ms)`,
    ),
    keyByHash: db.prepare<[string], KeyRow>('SELECT * FROM api_keys WHERE hash = ?'),
    allKeys: db.prepare<[], KeyRow>('SELECT * FROM api_keys ORDER BY created_ms DESC, id'),
    touchKey: db.prepare('UPDATE api_keys SET last_used_ms = ? WHERE id = ?'),
    deleteKey: db.prepare('DELETE FROM api_keys WHERE id = ?'),
    addUser: db.prepare(
      `INSERT OR IGNORE INTO gateway_users (name, password_hash, connection, root, read_only, permissions, created_ms)
       VALUES (@name, @password_hash, @connection, @root, @read_only, @permissions, @created_ms)`,
    ),
    getUser: db.prepare<[string], UserRow>('SELECT * FROM gateway_users WHERE name = ?'),
    allUsers: db.prepare<[], UserRow>('SELECT * FROM gateway_users ORDER BY name'),
    deleteUser: db.prepare('DELETE FROM gateway_users WHERE name = ?'),
    setPassword: db.prepare('UPDATE gateway_users SET password_hash = ? WHERE name = ?'),
    addUserKey: db.prepare(
      `INSERT OR IGNORE INTO gateway_user_keys (user, fingerprint, type, blob, comment, created_ms)
       VALUES (@user, @fingerprint, @type, @blob, @comment, @created_ms)`,
    ),
    userKeys: db.prepare<[string], UserKeyRow>('SELECT * FROM gateway_user_keys WHERE user = ? ORDER BY created_ms, rowid'),
    allUserKeys: db.prepare<[], UserKeyRow>('SELECT * FROM gateway_user_keys ORDER BY created_ms, rowid'),
    deleteUserKey: db.prepare('DELETE FROM gateway_user_keys WHERE user = ? AND fingerprint = ?'),
    deleteUserKeys: db.prepare('DELETE FROM gateway_user_keys WHERE user = ?'),
    addS3Key: db.prepare('INSERT INTO s3_keys (id, user, sealed, permissions, created_ms, last_used_ms) VALUES (@id, @user, @sealed, @permissions, @created_ms, @last_used_ms)'),
    getS3Key: db.prepare<[string], S3KeyRow>('SELECT * FROM s3_keys WHERE id = ?'),
    userS3Keys: db.prepare<[string], S3KeyRow>('SELECT * FROM s3_keys WHERE user = ? ORDER BY created_ms, rowid'),
    touchS3Key: db.prepare('UPDATE s3_keys SET last_used_ms = ? WHERE id = ?'),
    deleteS3Key: db.prepare('DELETE FROM s3_keys WHERE user = ? AND id = ?'),
    deleteUserS3Keys: db.prepare('DELETE FROM s3_keys WHERE user = ?'),
    putMeta: db.prepare(
      `INSERT OR REPLACE INTO s3_object_meta (storage, path, size, mtime_ms, etag, content_type, user_meta)
       VALUES (@storage, @path, @size, @mtime_ms, @etag, @content_type, @user_meta)`,
    ),
    getMeta: db.prepare<[string, string], ObjectMetaRow>('SELECT * FROM s3_object_meta WHERE storage = ? AND path = ?'),
    /** The paths as one JSON array: one statement whatever their number. */
    getMetas: db.prepare<[string, string], ObjectMetaRow>('SELECT * FROM s3_object_meta WHERE storage = ? AND path IN (SELECT value FROM json_each(?))'),
    deleteMeta: db.prepare('DELETE FROM s3_object_meta WHERE storage = ? AND path = ?'),
    putUpload: db.prepare(
      `INSERT OR REPLACE INTO s3_multipart_uploads (id, user, bucket, key, created_ms, content_type, user_meta, completed_etag)
       VALUES (@id, @user, @bucket, @key, @created_ms, @content_type, @user_meta, @completed_etag)`,
    ),
    getUpload: db.prepare<[string], UploadRow>('SELECT * FROM s3_multipart_uploads WHERE id = ?'),
    userUploads: db.prepare<[string, string], UploadRow>(
      'SELECT * FROM s3_multipart_uploads WHERE user = ? AND bucket = ? AND completed_etag IS NULL ORDER BY key, created_ms, id',
    ),
    expiredUploads: db.prepare<[number], UploadRow>('SELECT * FROM s3_multipart_uploads WHERE created_ms < ? ORDER BY created_ms, id'),
    completeUpload: db.prepare('UPDATE s3_multipart_uploads SET completed_etag = ? WHERE id = ?'),
    deleteUpload: db.prepare('DELETE FROM s3_multipart_uploads WHERE id = ?'),
    openUpload: db.prepare<[string], { one: number }>('SELECT 1 AS one FROM s3_multipart_uploads WHERE id = ? AND completed_etag IS NULL'),
    getPart: db.prepare<[string, number], PartRow>('SELECT * FROM s3_multipart_parts WHERE upload_id = ? AND number = ?'),
    putPart: db.prepare(
      `INSERT OR REPLACE INTO s3_multipart_parts (upload_id, number, size, etag, file, modified_ms)
       VALUES (@upload_id, @number, @size, @etag, @file, @modified_ms)`,
    ),
    parts: db.prepare<[string], PartRow>('SELECT * FROM s3_multipart_parts WHERE upload_id = ? ORDER BY number'),
    deleteParts: db.prepare('DELETE FROM s3_multipart_parts WHERE upload_id = ?'),
    putClient: db.prepare(
      `INSERT OR REPLACE INTO oauth_clients (client_id, name, redirect_uris, created_ms, last_used_ms)
       VALUES (@client_id, @name, @redirect_uris, @created_ms, @last_used_ms)`,
    ),
    getClient: db.prepare<[string], OAuthClientRow>('SELECT * FROM oauth_clients WHERE client_id = ?'),
    countClients: db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM oauth_clients'),
    touchClient: db.prepare('UPDATE oauth_clients SET last_used_ms = ? WHERE client_id = ?'),
    purgeClients: db.prepare('DELETE FROM oauth_clients WHERE last_used_ms IS NULL AND created_ms < ?'),
    evictClients: db.prepare(
      'DELETE FROM oauth_clients WHERE client_id IN (SELECT client_id FROM oauth_clients WHERE last_used_ms IS NULL ORDER BY created_ms, client_id LIMIT ?)',
    ),
    putRefresh: db.prepare(
      `INSERT INTO oauth_refresh_tokens (hash, family, client_id, resource, grant, expires_ms, used_ms)
       VALUES (@hash, @family, @client_id, @resource, @grant, @expires_ms, @used_ms)`,
    ),
    getRefresh: db.prepare<[string], OAuthRefreshRow>('SELECT * FROM oauth_refresh_tokens WHERE hash = ?'),
    useRefresh: db.prepare('UPDATE oauth_refresh_tokens SET used_ms = ? WHERE hash = ? AND used_ms IS NULL'),
    deleteFamily: db.prepare('DELETE FROM oauth_refresh_tokens WHERE family = ? OR expires_ms <= ?'),
    /** One statement: the count goes up, or starts again when its window has ended. */
    throttleHit: db.prepare<{ key: string; now: number; until: number }, { count: number; since_ms: number }>(
      `INSERT INTO login_throttles (key, count, since_ms, until_ms) VALUES (@key, 1, @now, @until)
       ON CONFLICT (key) DO UPDATE SET
         count = CASE WHEN until_ms > @now THEN count + 1 ELSE 1 END,
         since_ms = CASE WHEN until_ms > @now THEN since_ms ELSE @now END,
         until_ms = CASE WHEN until_ms > @now THEN until_ms ELSE @until END
       RETURNING count, since_ms`,
    ),
    throttlePeek: db.prepare<[string, number], { count: number; since_ms: number }>('SELECT count, since_ms FROM login_throttles WHERE key = ? AND until_ms > ?'),
    throttleDown: db.prepare('UPDATE login_throttles SET count = count - 1 WHERE key = ?'),
    throttleZero: db.prepare('DELETE FROM login_throttles WHERE key = ? AND count <= 0'),
    throttleForget: db.prepare('DELETE FROM login_throttles WHERE key = ?'),
    purgeThrottles: db.prepare('DELETE FROM login_throttles WHERE until_ms <= ?'),
    putCode: db.prepare(
      `INSERT OR REPLACE INTO oauth_codes (hash, client_id, redirect_uri, redirect_given, challenge, resource, sealed_grant, expires_ms, used_ms, family)
       VALUES (@hash, @client_id, @redirect_uri, @redirect_given, @challenge, @resource, @sealed_grant, @expires_ms, @used_ms, @family)`,
    ),
    getCode: db.prepare<[string], OAuthCodeRow>('SELECT * FROM oauth_codes WHERE hash = ?'),
    useCode: db.prepare('UPDATE oauth_codes SET used_ms = ?, family = ? WHERE hash = ? AND used_ms IS NULL'),
    purgeCodes: db.prepare('DELETE FROM oauth_codes WHERE expires_ms < ?'),
    putMcp: db.prepare(
      `INSERT OR REPLACE INTO mcp_sessions (hash, owner, protocol_version, init, created_ms, last_seen_ms)
       VALUES (@hash, @owner, @protocol_version, @init, @created_ms, @last_seen_ms)`,
    ),
    getMcp: db.prepare<[string], McpSessionRow>('SELECT * FROM mcp_sessions WHERE hash = ?'),
    touchMcp: db.prepare('UPDATE mcp_sessions SET last_seen_ms = MAX(last_seen_ms, ?) WHERE hash = ?'),
    deleteMcp: db.prepare('DELETE FROM mcp_sessions WHERE hash = ?'),
    purgeMcp: db.prepare('DELETE FROM mcp_sessions WHERE last_seen_ms < ?'),
    putTus: db.prepare('INSERT OR REPLACE INTO tus_uploads (id, upload, created_ms) VALUES (?, ?, ?)'),
    getTus: db.prepare<[string], TusUploadRow>('SELECT * FROM tus_uploads WHERE id = ?'),
    deleteTus: db.prepare('DELETE FROM tus_uploads WHERE id = ?'),
    expiredTus: db.prepare<[number], { id: string }>('SELECT id FROM tus_uploads WHERE created_ms < ? ORDER BY created_ms, id'),
  }
  const putPart = db.transaction((p: MultipartPartRecord): string | null | 'no-upload' => {
    if (q.openUpload.get(p.upload_id) === undefined) return 'no-upload'
    const prev = q.getPart.get(p.upload_id, p.number)
    q.putPart.run({ upload_id: p.upload_id, number: p.number, size: p.size, etag: p.etag, file: p.file, modified_ms: p.modified })
    return prev && prev.file !== p.file ? prev.file : null
  })
  const completeUpload = db.transaction((id: string, etag: string): boolean => {
    q.deleteParts.run(id)
    return q.completeUpload.run(etag, id).changes > 0
  })
  const deleteUpload = db.transaction((id: string): boolean => {
    q.deleteParts.run(id)
    return q.deleteUpload.run(id).changes > 0
  })
  const useRefresh = db.transaction((hash: string, at: number): OAuthRefreshRecord | null => {
    const r = q.getRefresh.get(hash)
    if (!r) return null
    q.useRefresh.run(at, hash)
    return toOAuthRefresh(r)
  })
  const useCode = db.transaction((hash: string, family: string, at: number): OAuthCodeRecord | null => {
    const r = q.getCode.get(hash)
    if (!r) return null
    q.useCode.run(at, family, hash)
    return toOAuthCode(r)
  })
  const throttleRefund = db.transaction((key: string): void => {
    q.throttleDown.run(key)
    q.throttleZero.run(key)
  })
  const keyRow = (user: string, k: AuthorizedKeyRecord): UserKeyRow => ({ user, fingerprint: k.fingerprint, type: k.type, blob: k.blob, comment: k.comment, created_ms: k.created })
  const addUser = db.transaction((u: GatewayUserRecord): boolean => {
    const r = q.addUser.run({
      name: u.name,
      password_hash: u.password_hash,
      connection: u.connection,
      root: u.root,
      // Kept for a filegate of before the bits (a downgrade): read-only when nothing may change.
      read_only: changesNothing(u.permissions) ? 1 : 0,
      permissions: toBits(u.permissions),
      created_ms: u.created,
    })
    if (r.changes === 0) return false
    for (const k of u.keys) q.addUserKey.run(keyRow(u.name, k))
    return true
  })
  const deleteUser = db.transaction((name: string): boolean => {
    q.deleteUserKeys.run(name)
    q.deleteUserS3Keys.run(name)
    return q.deleteUser.run(name).changes > 0
  })
  const addUserKey = db.transaction((name: string, k: AuthorizedKeyRecord): 'added' | 'duplicate' | 'no-user' => {
    if (q.getUser.get(name) === undefined) return 'no-user'
    return q.addUserKey.run(keyRow(name, k)).changes > 0 ? 'added' : 'duplicate'
  })
  const addS3Key = db.transaction((k: S3KeyRecord): 'added' | 'no-user' => {
    if (q.getUser.get(k.user) === undefined) return 'no-user'
    q.addS3Key.run({ id: k.id, user: k.user, sealed: k.sealed, permissions: k.permissions === null ? null : toBits(k.permissions), created_ms: k.created, last_used_ms: k.last_used })
    return 'added'
  })
  q.purge.run(Date.now())
  let open = true
  return {
    async revokeToken(id, untilMs) {
      if (untilMs <= Date.now()) return
      q.revoke.run(id, untilMs)
    },
    async isTokenRevoked(id) {
      return q.revoked.get(id, Date.now()) !== undefined
    },
    async putShare(s) {
      q.putShare.run({
        id: s.id,
        owner: s.owner,
        path: s.path,
        kind: s.kind,
        can_read: s.can_read ? 1 : 0,
        can_upload: s.can_upload ? 1 : 0,
        can_write: s.can_write ? 1 : 0,
        password_hash: s.password_hash,
        expire_ms: s.expire,
        sealed: s.sealed,
        created_ms: s.created,
      })
    },
    async getShare(id) {
      const r = q.getShare.get(id)
      return r ? toShare(r) : null
    },
    async listShares(owner) {
      return (owner === undefined ? q.allShares.all() : q.ownerShares.all(owner)).map(toShare)
    },
    async deleteShare(id) {
      return q.deleteShare.run(id).changes > 0
    },
    async putApiKey(k) {
      q.putKey.run({ id: k.id, name: k.name, hash: k.hash, origins: JSON.stringify(k.origins), created_ms: k.created, last_used_ms: k.last_used })
    },
    async getApiKeyByHash(hash) {
      const r = q.keyByHash.get(hash)
      return r ? toKey(r) : null
    },
    async listApiKeys() {
      return q.allKeys.all().map(toKey)
    },
    async touchApiKey(id, atMs) {
      q.touchKey.run(atMs, id)
    },
    async deleteApiKey(id) {
      return q.deleteKey.run(id).changes > 0
    },
    async addGatewayUser(u) {
      return addUser(u)
    },
    async getGatewayUser(name) {
      const r = q.getUser.get(name)
      return r ? toUser(r, q.userKeys.all(name)) : null
    },
    async listGatewayUsers() {
      const keys = new Map<string, UserKeyRow[]>()
      for (const k of q.allUserKeys.all()) {
        const list = keys.get(k.user)
        if (list) list.push(k)
        else keys.set(k.user, [k])
      }
      return q.allUsers.all().map((r) => toUser(r, keys.get(r.name) ?? []))
    },
    async deleteGatewayUser(name) {
      return deleteUser(name)
    },
    async setGatewayUserPassword(name, hash) {
      return q.setPassword.run(hash, name).changes > 0
    },
    async addGatewayUserKey(name, key) {
      return addUserKey(name, key)
    },
    async deleteGatewayUserKey(name, fingerprint) {
      return q.deleteUserKey.run(name, fingerprint).changes > 0
    },
    async addS3Key(key) {
      return addS3Key(key)
    },
    async getS3Key(id) {
      const r = q.getS3Key.get(id)
      return r ? toS3Key(r) : null
    },
    async listS3Keys(user) {
      return q.userS3Keys.all(user).map(toS3Key)
    },
    async touchS3Key(id, atMs) {
      q.touchS3Key.run(atMs, id)
    },
    async deleteS3Key(user, id) {
      return q.deleteS3Key.run(user, id).changes > 0
    },
    async putObjectMeta(m) {
      q.putMeta.run({ ...m, user_meta: JSON.stringify(m.user_meta) })
    },
    async getObjectMeta(storage, path) {
      const r = q.getMeta.get(storage, path)
      return r ? toObjectMeta(r) : null
    },
    async getObjectMetas(storage, paths) {
      const out = new Map<string, ObjectMetaRecord>()
      if (paths.length === 0) return out
      for (const r of q.getMetas.all(storage, JSON.stringify(paths))) out.set(r.path, toObjectMeta(r))
      return out
    },
    async deleteObjectMeta(storage, path) {
      q.deleteMeta.run(storage, path)
    },
    async putMultipartUpload(u) {
      q.putUpload.run({
        id: u.id,
        user: u.user,
        bucket: u.bucket,
        key: u.key,
        created_ms: u.created,
        content_type: u.content_type,
        user_meta: JSON.stringify(u.user_meta),
        completed_etag: u.completed_etag,
      })
    },
    async getMultipartUpload(id) {
      const r = q.getUpload.get(id)
      return r ? toUpload(r) : null
    },
    async listMultipartUploads(user, bucket) {
      return q.userUploads.all(user, bucket).map(toUpload)
    },
    async expiredMultipartUploads(beforeMs) {
      return q.expiredUploads.all(beforeMs).map(toUpload)
    },
    async completeMultipartUpload(id, etag) {
      return completeUpload(id, etag)
    },
    async deleteMultipartUpload(id) {
      return deleteUpload(id)
    },
    async putMultipartPart(p) {
      return putPart(p)
    },
    async listMultipartParts(id) {
      return q.parts.all(id).map(toPart)
    },
    async putOAuthClient(c) {
      q.putClient.run({ client_id: c.client_id, name: c.name, redirect_uris: JSON.stringify(c.redirect_uris), created_ms: c.created, last_used_ms: c.last_used })
    },
    async getOAuthClient(id) {
      const r = q.getClient.get(id)
      return r ? toOAuthClient(r) : null
    },
    async countOAuthClients() {
      return q.countClients.get()!.n
    },
    async touchOAuthClient(id, atMs) {
      q.touchClient.run(atMs, id)
    },
    async purgeOAuthClients(beforeMs) {
      return q.purgeClients.run(beforeMs).changes
    },
    async evictUnusedOAuthClients(count) {
      return q.evictClients.run(count).changes
    },
    async putOAuthRefresh(r) {
      q.putRefresh.run({ hash: r.hash, family: r.family, client_id: r.client_id, resource: r.resource, grant: r.grant, expires_ms: r.expires, used_ms: r.used })
    },
    async getOAuthRefresh(hash) {
      const r = q.getRefresh.get(hash)
      return r ? toOAuthRefresh(r) : null
    },
    async useOAuthRefresh(hash, atMs) {
      return useRefresh(hash, atMs)
    },
    async deleteOAuthFamily(family) {
      q.deleteFamily.run(family, Date.now())
    },
    async throttleHit(key, windowMs, nowMs) {
      const r = q.throttleHit.get({ key, now: nowMs, until: nowMs + windowMs })!
      return { count: r.count, since: r.since_ms } satisfies ThrottleCount
    },
    async throttlePeek(key, nowMs) {
      const r = q.throttlePeek.get(key, nowMs)
      return r ? { count: r.count, since: r.since_ms } : null
    },
    async throttleRefund(key) {
      throttleRefund(key)
    },
    async throttleForget(key) {
      q.throttleForget.run(key)
    },
    async purgeThrottles(nowMs) {
      return q.purgeThrottles.run(nowMs).changes
    },
    async putOAuthCode(c) {
      q.putCode.run({
        hash: c.hash,
        client_id: c.client_id,
        redirect_uri: c.redirect_uri,
        redirect_given: c.redirect_given ? 1 : 0,
        challenge: c.challenge,
        resource: c.resource,
        sealed_grant: c.grant,
        expires_ms: c.expires,
        used_ms: c.used,
        family: c.family,
      })
    },
    async useOAuthCode(hash, family, atMs) {
      return useCode(hash, family, atMs)
    },
    async purgeOAuthCodes(beforeMs) {
      return q.purgeCodes.run(beforeMs).changes
    },
    async putMcpSession(m) {
      q.putMcp.run({ hash: m.hash, owner: m.owner, protocol_version: m.protocol_version, init: m.init, created_ms: m.created, last_seen_ms: m.last_seen })
    },
    async getMcpSession(hash) {
      const r = q.getMcp.get(hash)
      return r ? toMcpSession(r) : null
    },
    async touchMcpSession(hash, atMs) {
      return q.touchMcp.run(atMs, hash).changes > 0
    },
    async deleteMcpSession(hash) {
      return q.deleteMcp.run(hash).changes > 0
    },
    async purgeMcpSessions(beforeMs) {
      return q.purgeMcp.run(beforeMs).changes
    },
    async putTusUpload(u) {
      q.putTus.run(u.id, u.upload, u.created)
    },
    async getTusUpload(id) {
      const r = q.getTus.get(id)
      return r ? toTusUpload(r) : null
    },
    async deleteTusUpload(id) {
      return q.deleteTus.run(id).changes > 0
    },
    async expiredTusUploads(beforeMs) {
      return q.expiredTus.all(beforeMs).map((r) => r.id)
    },
    async close() {
      if (open) db.close()
      open = false
    },
  }
}

function migrate(db: Database.Database): void {
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
