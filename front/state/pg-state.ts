/**
 * @module front/state/pg-state
 * The shared state store: PostgreSQL through the `pg` client (docs/postgresql.md), for
 * several filegate nodes on one database. Same semantics as the SQLite store
 * (front/state/sqlite-state.ts), made to hold across nodes: what must be atomic is one
 * statement or one transaction with row locks (an upload's row serialises its parts,
 * its completion and its removal; a refresh token or an authorization code is marked
 * used under its row lock; a login throttle counts in one upsert); dependent rows go
 * with their owner by foreign key.
 *
 * Rows come back as the records themselves: columns are aliased to the records'
 * names, `bigint` read as numbers (epoch ms and sizes stay far below 2^53), `json`
 * parsed by the client. Queries are parameterised, always.
 *
 * When the database cannot be reached, calls fail with ApiError UNAVAILABLE (503, to
 * retry) rather than a 500, and the pool reconnects once it is back.
 */
import pg from 'pg'
import { ApiError } from '../../core/api-error.js'
import type { GatewayUserRecord, MultipartPartRecord, ObjectMetaRecord, OAuthCodeRecord, OAuthRefreshRecord, S3KeyRecord, StateStore, ThrottleCount } from '../../core/state.js'
import { changesNothing, fromBits, storedUserPermissions, toBits } from '../../core/permissions.js'
import { migratePg } from './pg-migrations.js'

export interface PgStateOptions {
  /** Connections at most in this node's pool. */
  readonly poolSize: number
  /** Told about connections lost while idle (the pool replaces them). */
  readonly onIdleError?: (err: Error) => void
}

const INT8 = 20
/** bigint as a number; every other type as pg reads it. */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
}

const SHARE = 'id, owner, path, kind, can_read, can_upload, can_write, password_hash, expire_ms AS expire, sealed, created_ms AS created'
const API_KEY = 'id, name, hash, origins, created_ms AS created, last_used_ms AS last_used'
const USER_KEYS = `COALESCE((SELECT json_agg(json_build_object('fingerprint', k.fingerprint, 'type', k.type, 'blob', k.blob, 'comment', k.comment, 'created', k.created_ms)
  ORDER BY k.created_ms, k.seq) FROM gateway_user_keys k WHERE k.user_name = u.name), '[]')`
const USER = `u.name, u.password_hash, ${USER_KEYS} AS keys, u.connection, u.root, u.read_only, u.permissions, u.created_ms AS created`
const S3_KEY = 'id, user_name AS "user", sealed, permissions, created_ms AS created, last_used_ms AS last_used'

/** The permission bits as stored (core/permissions.ts `toBits`): a user's NULL is its read_only flag's, a key's its user's. */
type UserRow = Omit<GatewayUserRecord, 'permissions'> & { read_only: boolean; permissions: number | null }
const toUser = ({ read_only, permissions, ...u }: UserRow): GatewayUserRecord => ({ ...u, permissions: storedUserPermissions(permissions, read_only) })
type S3KeyRow = Omit<S3KeyRecord, 'permissions'> & { permissions: number | null }
const toS3Key = (k: S3KeyRow): S3KeyRecord => ({ ...k, permissions: k.permissions === null ? null : fromBits(k.permissions) })
const META = 'storage, path, size, mtime_ms, etag, content_type, user_meta'
const UPLOAD = 'id, user_name AS "user", bucket, key, created_ms AS created, content_type, user_meta, completed_etag'
const PART = 'upload_id, number, size, etag, file, modified_ms AS modified'
const CLIENT = 'client_id, name, redirect_uris, created_ms AS created, last_used_ms AS last_used'
const REFRESH = 'hash, family, client_id, resource, grant_sealed AS "grant", expires_ms AS expires, used_ms AS used'
const MCP_SESSION = 'hash, owner, protocol_version, init, created_ms AS created, last_seen_ms AS last_seen'

/** SQLSTATE classes and codes that mean "the database is not there (now)". */
const UNAVAILABLE_SQLSTATE = /^(08|57P0[123]|53300)/
const UNAVAILABLE_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE'])
const UNAVAILABLE_MESSAGE = /^(Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error)/

/** Whether an error of `pg` means the database could not be reached or went away. */
function isUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false
  const code = (err as { code?: unknown }).code
  if (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_ERRNO.has(code))) return true
  if (err instanceof AggregateError) return err.errors.some(isUnavailable)
  return UNAVAILABLE_MESSAGE.test(err.message)
}

/** Text PostgreSQL cannot keep (NUL, which SQLite keeps): input to refuse, not an internal error. */
const UNKEEPABLE_TEXT = new Set(['22021', '22P05'])

const mapError = (err: unknown): unknown => {
  if (isUnavailable(err)) return new ApiError('UNAVAILABLE', 'the state store is unavailable, try again shortly', { cause: err })
  if (UNKEEPABLE_TEXT.has((err as { code?: unknown }).code as string)) return new ApiError('INVALID_INPUT', 'a text contains a character the state store cannot keep (NUL)', { cause: err })
  return err
}

/** `host:port` of a postgres:// URL: what messages may name (never its user or password). */
export function pgAddress(url: string): string {
  const u = new URL(url)
  return `${u.hostname || 'localhost'}:${u.port || '5432'}`
}

type Row = Record<string, unknown>

/** Opens the pool, migrates the database (once across nodes) and returns the store. */
export async function openPgState(url: string, opts: PgStateOptions): Promise<StateStore> {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.poolSize,
    connectionTimeoutMillis: 10_000,
    query_timeout: 30_000,
    idleTimeoutMillis: 30_000,
    types,
    application_name: 'filegate',
  })
  // An idle connection dropped by the server is an 'error' event: without a listener it would stop the process.
  pool.on('error', (err) => opts.onIdleError?.(err))
  try {
    const client = await pool.connect()
    const ignore = () => undefined // a lost connection fails the query under way, which reports it
    client.on('error', ignore)
    try {
      await migratePg(client)
      await client.query('DELETE FROM revoked_tokens WHERE until_ms <= $1', [Date.now()])
    } finally {
      client.off('error', ignore)
      client.release()
    }
  } catch (err) {
    await pool.end().catch(() => undefined)
    const why = err instanceof Error ? err.message || (err as { code?: string }).code : String(err)
    throw new Error(`the PostgreSQL state store at ${pgAddress(url)}: ${why}`, { cause: err })
  }

  const query = async <R extends Row = Row>(sql: string, params: readonly unknown[] = []): Promise<pg.QueryResult<R>> => {
    try {
      return await pool.query<R>(sql, params as unknown[])
    } catch (err) {
      throw mapError(err)
    }
  }
  const one = async <R>(sql: string, params: readonly unknown[]): Promise<R | null> => ((await query(sql, params)).rows[0] as R | undefined) ?? null
  const all = async <R>(sql: string, params: readonly unknown[] = []): Promise<R[]> => (await query(sql, params)).rows as R[]
  /** How many rows a statement changed. */
  const count = async (sql: string, params: readonly unknown[]): Promise<number> => (await query(sql, params)).rowCount ?? 0
  const changed = async (sql: string, params: readonly unknown[]): Promise<boolean> => (await count(sql, params)) > 0
  /** Runs `fn` in one transaction on one connection: committed if it returns, rolled back if it throws. */
  const transaction = async <T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> => {
    let client: pg.PoolClient
    try {
      client = await pool.connect()
    } catch (err) {
      throw mapError(err)
    }
    let broken: Error | undefined
    // A checked-out client has no pool listener: its connection lost between two statements must not be an uncaught 'error'.
    const onError = (err: Error) => (broken = err)
    client.on('error', onError)
    try {
      await client.query('BEGIN')
      const result = await fn(client)
      await client.query('COMMIT')
      return result
    } catch (err) {
      if (isUnavailable(err)) broken = err as Error
      else await client.query('ROLLBACK').catch((e: Error) => (broken = e))
      throw mapError(err)
    } finally {
      client.off('error', onError)
      client.release(broken)
    }
  }
  /** A foreign-key violation: the owner row is not there. */
  const isNoOwner = (err: unknown): boolean => (err as { code?: unknown }).code === '23503'
  const json = (v: unknown): string => JSON.stringify(v)

  return {
    async revokeToken(id, untilMs) {
      if (untilMs <= Date.now()) return
      await query('INSERT INTO revoked_tokens (id, until_ms) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET until_ms = EXCLUDED.until_ms', [id, untilMs])
    },
    async isTokenRevoked(id) {
      return (await one('SELECT 1 FROM revoked_tokens WHERE id = $1 AND until_ms > $2', [id, Date.now()])) !== null
    },

    async putShare(s) {
      await query(
        `INSERT INTO shares (id, owner, path, kind, can_read, can_upload, can_write, password_hash, expire_ms, sealed, created_ms)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner, path = EXCLUDED.path, kind = EXCLUDED.kind, can_read = EXCLUDED.can_read,
           can_upload = EXCLUDED.can_upload, can_write = EXCLUDED.can_write, password_hash = EXCLUDED.password_hash,
           expire_ms = EXCLUDED.expire_ms, sealed = EXCLUDED.sealed, created_ms = EXCLUDED.created_ms`,
        [s.id, s.owner, s.path, s.kind, s.can_read, s.can_upload, s.can_write, s.password_hash, s.expire, s.sealed, s.created],
      )
    },
    getShare: (id) => one(`SELECT ${SHARE} FROM shares WHERE id = $1`, [id]),
    listShares: (owner) =>
      owner === undefined
        ? all(`SELECT ${SHARE} FROM shares ORDER BY created_ms DESC, id`)
        : all(`SELECT ${SHARE} FROM shares WHERE owner = $1 ORDER BY created_ms DESC, id`, [owner]),
    deleteShare: (id) => changed('DELETE FROM shares WHERE id = $1', [id]),

    async putApiKey(k) {
      await query(
        `INSERT INTO api_keys (id, name, hash, origins, created_ms, last_used_ms) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, hash = EXCLUDED.hash, origins = EXCLUDED.origins,
           created_ms = EXCLUDED.created_ms, last_used_ms = EXCLUDED.last_used_ms`,
        [k.id, k.name, k.hash, json(k.origins), k.created, k.last_used],
      )
    },
    getApiKeyByHash: (hash) => one(`SELECT ${API_KEY} FROM api_keys WHERE hash = $1`, [hash]),
    listApiKeys: () => all(`SELECT ${API_KEY} FROM api_keys ORDER BY created_ms DESC, id`),
    async touchApiKey(id, atMs) {
      await query('UPDATE api_keys SET last_used_ms = $1 WHERE id = $2', [atMs, id])
    },
    deleteApiKey: (id) => changed('DELETE FROM api_keys WHERE id = $1', [id]),

    addGatewayUser: (u) =>
      transaction(async (c) => {
        // The primary key decides between nodes adding the same name: the second waits for the first, then adds nothing.
        const added = await c.query(
          `INSERT INTO gateway_users (name, password_hash, connection, root, read_only, permissions, created_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)
           ON CONFLICT (name) DO NOTHING`,
          // read_only kept for a filegate of before the bits (a downgrade): true when nothing may change.
          [u.name, u.password_hash, u.connection, u.root, changesNothing(u.permissions), toBits(u.permissions), u.created],
        )
        if (added.rowCount === 0) return false
        for (const k of u.keys) {
          await c.query('INSERT INTO gateway_user_keys (user_name, fingerprint, type, blob, comment, created_ms) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING', [
            u.name,
            k.fingerprint,
            k.type,
            k.blob,
            k.comment,
            k.created,
          ])
        }
        return true
      }),
    getGatewayUser: async (name) => {
      const row = await one<UserRow>(`SELECT ${USER} FROM gateway_users u WHERE u.name = $1`, [name])
      return row && toUser(row)
    },
    listGatewayUsers: async () => (await all<UserRow>(`SELECT ${USER} FROM gateway_users u ORDER BY u.name`)).map(toUser),
    // Keys and S3 keys go with the user (ON DELETE CASCADE).
    deleteGatewayUser: (name) => changed('DELETE FROM gateway_users WHERE name = $1', [name]),
    setGatewayUserPassword: (name, hash) => changed('UPDATE gateway_users SET password_hash = $1 WHERE name = $2', [hash, name]),
    async addGatewayUserKey(name, k) {
      try {
        const added = await changed(
          'INSERT INTO gateway_user_keys (user_name, fingerprint, type, blob, comment, created_ms) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING',
          [name, k.fingerprint, k.type, k.blob, k.comment, k.created],
        )
        return added ? 'added' : 'duplicate'
      } catch (err) {
        if (isNoOwner(err)) return 'no-user'
        throw err
      }
    },
    deleteGatewayUserKey: (name, fingerprint) => changed('DELETE FROM gateway_user_keys WHERE user_name = $1 AND fingerprint = $2', [name, fingerprint]),

    async addS3Key(k) {
      try {
        const bits = k.permissions === null ? null : toBits(k.permissions)
        await query('INSERT INTO s3_keys (id, user_name, sealed, permissions, created_ms, last_used_ms) VALUES ($1, $2, $3, $4, $5, $6)', [k.id, k.user, k.sealed, bits, k.created, k.last_used])
        return 'added'
      } catch (err) {
        if (isNoOwner(err)) return 'no-user'
        throw err
      }
    },
    getS3Key: async (id) => {
      const row = await one<S3KeyRow>(`SELECT ${S3_KEY} FROM s3_keys WHERE id = $1`, [id])
      return row && toS3Key(row)
    },
    listS3Keys: async (user) => (await all<S3KeyRow>(`SELECT ${S3_KEY} FROM s3_keys WHERE user_name = $1 ORDER BY created_ms, seq`, [user])).map(toS3Key),
    async touchS3Key(id, atMs) {
      await query('UPDATE s3_keys SET last_used_ms = $1 WHERE id = $2', [atMs, id])
    },
    deleteS3Key: (user, id) => changed('DELETE FROM s3_keys WHERE user_name = $1 AND id = $2', [user, id]),

    async putObjectMeta(m) {
      await query(
        `INSERT INTO s3_object_meta (storage, path, size, mtime_ms, etag, content_type, user_meta) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (storage, path) DO UPDATE SET size = EXCLUDED.size, mtime_ms = EXCLUDED.mtime_ms, etag = EXCLUDED.etag,
           content_type = EXCLUDED.content_type, user_meta = EXCLUDED.user_meta`,
        [m.storage, m.path, m.size, m.mtime_ms, m.etag, m.content_type, json(m.user_meta)],
      )
    },
    getObjectMeta: (storage, path) => one(`SELECT ${META} FROM s3_object_meta WHERE storage = $1 AND path = $2`, [storage, path]),
    async getObjectMetas(storage, paths) {
      const out = new Map<string, ObjectMetaRecord>()
      if (paths.length === 0) return out
      const rows = await all<ObjectMetaRecord>(`SELECT ${META} FROM s3_object_meta WHERE storage = $1 AND path = ANY($2::text[])`, [storage, paths])
      for (const r of rows) out.set(r.path, r)
      return out
    },
    async deleteObjectMeta(storage, path) {
      await query('DELETE FROM s3_object_meta WHERE storage = $1 AND path = $2', [storage, path])
    },

    async putMultipartUpload(u) {
      await query(
        `INSERT INTO s3_multipart_uploads (id, user_name, bucket, key, created_ms, content_type, user_meta, completed_etag) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (id) DO UPDATE SET user_name = EXCLUDED.user_name, bucket = EXCLUDED.bucket, key = EXCLUDED.key, created_ms = EXCLUDED.created_ms,
           content_type = EXCLUDED.content_type, user_meta = EXCLUDED.user_meta, completed_etag = EXCLUDED.completed_etag`,
        [u.id, u.user, u.bucket, u.key, u.created, u.content_type, json(u.user_meta), u.completed_etag],
      )
    },
    getMultipartUpload: (id) => one(`SELECT ${UPLOAD} FROM s3_multipart_uploads WHERE id = $1`, [id]),
    listMultipartUploads: (user, bucket) =>
      all(`SELECT ${UPLOAD} FROM s3_multipart_uploads WHERE user_name = $1 AND bucket = $2 AND completed_etag IS NULL ORDER BY key, created_ms, id`, [user, bucket]),
    expiredMultipartUploads: (beforeMs) => all(`SELECT ${UPLOAD} FROM s3_multipart_uploads WHERE created_ms < $1 ORDER BY created_ms, id`, [beforeMs]),
    completeMultipartUpload: (id, etag) =>
      transaction(async (c) => {
        // The upload's row lock first: a part being recorded finishes before, or finds the upload completed after.
        const done = await c.query('UPDATE s3_multipart_uploads SET completed_etag = $1 WHERE id = $2', [etag, id])
        await c.query('DELETE FROM s3_multipart_parts WHERE upload_id = $1', [id])
        return (done.rowCount ?? 0) > 0
      }),
    // Its parts go with it (ON DELETE CASCADE).
    deleteMultipartUpload: (id) => changed('DELETE FROM s3_multipart_uploads WHERE id = $1', [id]),
    putMultipartPart: (p: MultipartPartRecord) =>
      transaction(async (c): Promise<string | null | 'no-upload'> => {
        // Holding the open upload's row serialises its parts, its completion and its removal,
        // so the part replaced is the one this call read (its file is the caller's to remove).
        const open = await c.query('SELECT 1 FROM s3_multipart_uploads WHERE id = $1 AND completed_etag IS NULL FOR UPDATE', [p.upload_id])
        if (open.rowCount === 0) return 'no-upload'
        const prev = await c.query<{ file: string }>('SELECT file FROM s3_multipart_parts WHERE upload_id = $1 AND number = $2', [p.upload_id, p.number])
        await c.query(
          `INSERT INTO s3_multipart_parts (upload_id, number, size, etag, file, modified_ms) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (upload_id, number) DO UPDATE SET size = EXCLUDED.size, etag = EXCLUDED.etag, file = EXCLUDED.file, modified_ms = EXCLUDED.modified_ms`,
          [p.upload_id, p.number, p.size, p.etag, p.file, p.modified],
        )
        const file = prev.rows[0]?.file
        return file !== undefined && file !== p.file ? file : null
      }),
    listMultipartParts: (id) => all(`SELECT ${PART} FROM s3_multipart_parts WHERE upload_id = $1 ORDER BY number`, [id]),

    async putOAuthClient(c) {
      await query(
        `INSERT INTO oauth_clients (client_id, name, redirect_uris, created_ms, last_used_ms) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (client_id) DO UPDATE SET name = EXCLUDED.name, redirect_uris = EXCLUDED.redirect_uris, created_ms = EXCLUDED.created_ms, last_used_ms = EXCLUDED.last_used_ms`,
        [c.client_id, c.name, json(c.redirect_uris), c.created, c.last_used],
      )
    },
    getOAuthClient: (id) => one(`SELECT ${CLIENT} FROM oauth_clients WHERE client_id = $1`, [id]),
    async countOAuthClients() {
      return (await one<{ n: number }>('SELECT count(*) AS n FROM oauth_clients', []))!.n
    },
    async touchOAuthClient(id, atMs) {
      await query('UPDATE oauth_clients SET last_used_ms = $1 WHERE client_id = $2', [atMs, id])
    },
    purgeOAuthClients: (beforeMs) => count('DELETE FROM oauth_clients WHERE last_used_ms IS NULL AND created_ms < $1', [beforeMs]),
    evictUnusedOAuthClients: (n) =>
      count('DELETE FROM oauth_clients WHERE client_id IN (SELECT client_id FROM oauth_clients WHERE last_used_ms IS NULL ORDER BY created_ms, client_id LIMIT $1)', [n]),

    async putOAuthRefresh(r) {
      await query('INSERT INTO oauth_refresh_tokens (hash, family, client_id, resource, grant_sealed, expires_ms, used_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
        r.hash,
        r.family,
        r.client_id,
        r.resource,
        r.grant,
        r.expires,
        r.used,
      ])
    },
    getOAuthRefresh: (hash) => one(`SELECT ${REFRESH} FROM oauth_refresh_tokens WHERE hash = $1`, [hash]),
    // One statement: the row is locked, read as it is once any concurrent use has committed, and marked.
    useOAuthRefresh: (hash, atMs) =>
      one<OAuthRefreshRecord>(
        `UPDATE oauth_refresh_tokens t SET used_ms = COALESCE(old.used_ms, $2)
         FROM (SELECT hash, used_ms FROM oauth_refresh_tokens WHERE hash = $1 FOR UPDATE) old
         WHERE t.hash = old.hash
         RETURNING t.hash, t.family, t.client_id, t.resource, t.grant_sealed AS "grant", t.expires_ms AS expires, old.used_ms AS used`,
        [hash, atMs],
      ),
    async deleteOAuthFamily(family) {
      await query('DELETE FROM oauth_refresh_tokens WHERE family = $1 OR expires_ms <= $2', [family, Date.now()])
    },

    // One statement: the count goes up, or starts again when its window has ended; concurrent hits wait on the row.
    throttleHit: (key, windowMs, nowMs) =>
      one<ThrottleCount>(
        `INSERT INTO login_throttles AS t (key, count, since_ms, until_ms) VALUES ($1, 1, $2, $3)
         ON CONFLICT (key) DO UPDATE SET
           count = CASE WHEN t.until_ms > $2 THEN t.count + 1 ELSE 1 END,
           since_ms = CASE WHEN t.until_ms > $2 THEN t.since_ms ELSE $2 END,
           until_ms = CASE WHEN t.until_ms > $2 THEN t.until_ms ELSE $3 END
         RETURNING count, since_ms AS since`,
        [key, nowMs, nowMs + windowMs],
      ) as Promise<ThrottleCount>,
    throttlePeek: (key, nowMs) => one<ThrottleCount>('SELECT count, since_ms AS since FROM login_throttles WHERE key = $1 AND until_ms > $2', [key, nowMs]),
    throttleRefund: (key) =>
      transaction(async (c) => {
        const left = await c.query<{ count: number }>('UPDATE login_throttles SET count = count - 1 WHERE key = $1 RETURNING count', [key])
        if (left.rows[0] !== undefined && left.rows[0].count <= 0) await c.query('DELETE FROM login_throttles WHERE key = $1', [key])
      }),
    async throttleForget(key) {
      await query('DELETE FROM login_throttles WHERE key = $1', [key])
    },
    purgeThrottles: (nowMs) => count('DELETE FROM login_throttles WHERE until_ms <= $1', [nowMs]),

    async putOAuthCode(c) {
      await query(
        `INSERT INTO oauth_codes (hash, client_id, redirect_uri, redirect_given, challenge, resource, grant_sealed, expires_ms, used_ms, family)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (hash) DO UPDATE SET client_id = EXCLUDED.client_id, redirect_uri = EXCLUDED.redirect_uri, redirect_given = EXCLUDED.redirect_given,
           challenge = EXCLUDED.challenge, resource = EXCLUDED.resource, grant_sealed = EXCLUDED.grant_sealed, expires_ms = EXCLUDED.expires_ms,
           used_ms = EXCLUDED.used_ms, family = EXCLUDED.family`,
        [c.hash, c.client_id, c.redirect_uri, c.redirect_given, c.challenge, c.resource, c.grant, c.expires, c.used, c.family],
      )
    },
    // As useOAuthRefresh: under the row's lock, read as any concurrent exchange left it; only the first sets the family.
    useOAuthCode: (hash, family, atMs) =>
      one<OAuthCodeRecord>(
        `UPDATE oauth_codes t SET used_ms = COALESCE(old.used_ms, $3), family = CASE WHEN old.used_ms IS NULL THEN $2 ELSE old.family END
         FROM (SELECT hash, used_ms, family FROM oauth_codes WHERE hash = $1 FOR UPDATE) old
         WHERE t.hash = old.hash
         RETURNING t.hash, t.client_id, t.redirect_uri, t.redirect_given, t.challenge, t.resource, t.grant_sealed AS "grant",
           t.expires_ms AS expires, old.used_ms AS used, old.family AS family`,
        [hash, family, atMs],
      ),
    purgeOAuthCodes: (beforeMs) => count('DELETE FROM oauth_codes WHERE expires_ms < $1', [beforeMs]),

    async putMcpSession(m) {
      await query(
        `INSERT INTO mcp_sessions (hash, owner, protocol_version, init, created_ms, last_seen_ms) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (hash) DO UPDATE SET owner = EXCLUDED.owner, protocol_version = EXCLUDED.protocol_version, init = EXCLUDED.init,
           created_ms = EXCLUDED.created_ms, last_seen_ms = EXCLUDED.last_seen_ms`,
        [m.hash, m.owner, m.protocol_version, m.init, m.created, m.last_seen],
      )
    },
    getMcpSession: (hash) => one(`SELECT ${MCP_SESSION} FROM mcp_sessions WHERE hash = $1`, [hash]),
    touchMcpSession: (hash, atMs) => changed('UPDATE mcp_sessions SET last_seen_ms = GREATEST(last_seen_ms, $1) WHERE hash = $2', [atMs, hash]),
    deleteMcpSession: (hash) => changed('DELETE FROM mcp_sessions WHERE hash = $1', [hash]),
    purgeMcpSessions: (beforeMs) => count('DELETE FROM mcp_sessions WHERE last_seen_ms < $1', [beforeMs]),

    async putTusUpload(u) {
      await query('INSERT INTO tus_uploads (id, upload, created_ms) VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET upload = EXCLUDED.upload, created_ms = EXCLUDED.created_ms', [
        u.id,
        u.upload,
        u.created,
      ])
    },
    getTusUpload: (id) => one(`SELECT id, upload, created_ms AS created FROM tus_uploads WHERE id = $1`, [id]),
    deleteTusUpload: (id) => changed('DELETE FROM tus_uploads WHERE id = $1', [id]),
    async expiredTusUploads(beforeMs) {
      return (await all<{ id: string }>('SELECT id FROM tus_uploads WHERE created_ms < $1 ORDER BY created_ms, id', [beforeMs])).map((r) => r.id)
    },

    connections: () => ({ open: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),

    async close() {
      if (!pool.ended && !pool.ending) await pool.end()
    },
  }
}
