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
 * Each feature's records are in a file of their own under front/state/pg/ (one per part
 * of core/state/), querying through front/state/pg/db.ts; the schema and its
 * migrations are front/state/pg-migrations.ts.
 *
 * When the database cannot be reached, calls fail with ApiError UNAVAILABLE (503, to
 * retry) rather than a 500, and the pool reconnects once it is back.
 */
import pg from 'pg'
import type { StateStore } from '../../core/state.js'
import { migratePg } from './pg-migrations.js'
import { pgApiKeys } from './pg/api-keys.js'
import { pgDb } from './pg/db.js'
import { pgGatewayUsers } from './pg/gateway-users.js'
import { pgMcpSessions } from './pg/mcp-sessions.js'
import { pgOAuthClients } from './pg/oauth-clients.js'
import { pgOAuthGrants } from './pg/oauth-grants.js'
import { pgS3Keys } from './pg/s3-keys.js'
import { pgMultipart } from './pg/s3-multipart.js'
import { pgObjectMeta } from './pg/s3-objects.js'
import { pgShares } from './pg/shares.js'
import { pgThrottles } from './pg/throttles.js'
import { pgTokens } from './pg/tokens.js'
import { pgTusUploads } from './pg/tus-uploads.js'

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

/** `host:port` of a postgres:// URL: what messages may name (never its user or password). */
export function pgAddress(url: string): string {
  const u = new URL(url)
  return `${u.hostname || 'localhost'}:${u.port || '5432'}`
}

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

  const db = pgDb(pool)
  return {
    ...pgTokens(db),
    ...pgShares(db),
    ...pgApiKeys(db),
    ...pgGatewayUsers(db),
    ...pgS3Keys(db),
    ...pgObjectMeta(db),
    ...pgMultipart(db),
    ...pgOAuthClients(db),
    ...pgOAuthGrants(db),
    ...pgThrottles(db),
    ...pgMcpSessions(db),
    ...pgTusUploads(db),
    connections: () => ({ open: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),

    async close() {
      if (!pool.ended && !pool.ending) await pool.end()
    },
  }
}
