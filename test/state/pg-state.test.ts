/**
 * @module test/state/pg-state.test
 * The PostgreSQL state store on a real server (test/servers/postgres.ts): the shared
 * store suite (test/state/store-suite.ts), each case on a database of its own whose
 * default collation is not byte order (ICU en-US), then what is PostgreSQL's own:
 * migrations once across nodes starting together, a newer schema refused, clear
 * errors without the password, 503 while the server is away and recovery after.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import t, { type Test } from 'tap'
import { isApiError } from '../../core/api-error.js'
import type { StateStore } from '../../core/state.js'
import { PG_SCHEMA_VERSION } from '../../front/state/pg-migrations.js'
import { openPgState } from '../../front/state/pg-state.js'
import { freePort } from '../servers/process.js'
import { type Postgres, startPostgres } from '../servers/postgres.js'
import { storeSuite } from './store-suite.js'
import { FULL_ACCESS } from '../../core/permissions.js'

const server: Postgres = await startPostgres(t)

/** A fresh database owned by the test role; its URL. */
function freshDatabase(): string {
  const db = `fg_${randomBytes(6).toString('hex')}`
  server.psql(`CREATE DATABASE ${db} OWNER ${server.user} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'`)
  return server.url.replace(/\/[^/]+$/, `/${db}`)
}

async function openStore(t: Test, url: string, poolSize = 4): Promise<StateStore> {
  const s = await openPgState(url, { poolSize })
  t.teardown(() => s.close())
  return s
}

/** Runs SQL on the database of `url` with a client of its own. */
async function sql(url: string, text: string): Promise<Record<string, unknown>[]> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    return (await c.query(text)).rows as Record<string, unknown>[]
  } finally {
    await c.end()
  }
}

storeSuite(t, async (t) => {
  const url = freshDatabase()
  return [await openStore(t, url), await openStore(t, url)]
})

t.test('nodes starting together migrate the database once', async (t) => {
  const url = freshDatabase()
  const nodes = await Promise.all([1, 2, 3, 4].map(() => openStore(t, url, 1)))
  const rows = await sql(url, 'SELECT version FROM schema_migrations ORDER BY version')
  t.same(rows.map((r) => r.version), Array.from({ length: PG_SCHEMA_VERSION }, (_, i) => i + 1), 'each version applied and recorded once')
  await nodes[0]!.revokeToken('x', Date.now() + 60_000)
  t.equal(await nodes[3]!.isTokenRevoked('x'), true, 'one database for all')
})

t.test('a database newer than this build is refused', async (t) => {
  const url = freshDatabase()
  await (await openPgState(url, { poolSize: 1 })).close()
  await sql(url, `INSERT INTO schema_migrations (version, applied_ms) VALUES (${PG_SCHEMA_VERSION + 1}, 0)`)
  await t.rejects(openPgState(url, { poolSize: 1 }), /newer than this filegate/)
})

t.test('an unreachable server or a wrong password: a clear error naming host:port, never the password', async (t) => {
  const port = await freePort()
  const password = 'a-secret-that-must-not-show'
  const err = (await openPgState(`postgres://someone:${password}@127.0.0.1:${port}/db`, { poolSize: 1 }).catch((e: unknown) => e)) as Error
  t.match(err.message, `the PostgreSQL state store at 127.0.0.1:${port}: `)
  t.match(err.message, /ECONNREFUSED/)
  t.notMatch(err.message, password)
  const wrong = (await openPgState(server.url.replace(server.password, password), { poolSize: 1 }).catch((e: unknown) => e)) as Error
  t.match(wrong.message, `127.0.0.1:${server.port}`)
  t.match(wrong.message, /password authentication failed/)
  t.notMatch(wrong.message, password)
})

t.test('while the server is away calls fail as UNAVAILABLE; they work again once it is back', async (t) => {
  const s = await openStore(t, freshDatabase(), 2)
  await s.putMultipartUpload({ id: 'u', user: 'u', bucket: 'b', key: 'k', created: 1, content_type: null, user_meta: {}, completed_etag: null })
  t.equal(await s.isTokenRevoked('x'), false)
  await server.stop()
  let restarted = false
  t.teardown(async () => {
    if (!restarted) await server.start()
  })
  for (const call of [() => s.isTokenRevoked('x'), () => s.putMultipartPart({ upload_id: 'u', number: 1, size: 1, etag: 'e', file: 'f', modified: 1 })]) {
    const err = await call().catch((e: unknown) => e)
    t.ok(isApiError(err) && err.code === 'UNAVAILABLE', `UNAVAILABLE, not an internal error (got ${String(err)})`)
  }
  await server.start()
  restarted = true
  // The port opens before the server accepts sessions: UNAVAILABLE until then, nothing else.
  const deadline = Date.now() + 60_000
  for (;;) {
    const err = await s.isTokenRevoked('x').then(() => null, (e: unknown) => e)
    if (err === null) break
    if (!isApiError(err) || err.code !== 'UNAVAILABLE' || Date.now() > deadline) throw err
    await new Promise((r) => setTimeout(r, 100))
  }
  t.equal(await s.isTokenRevoked('x'), false, 'a plain query')
  t.equal(await s.putMultipartPart({ upload_id: 'u', number: 1, size: 1, etag: 'e', file: 'f', modified: 1 }), null, 'a transaction')
})

t.test('the URL\'s sslmode reaches the client', async (t) => {
  const url = freshDatabase()
  const plain = await openStore(t, `${url}?sslmode=disable`, 1)
  t.equal(await plain.isTokenRevoked('x'), false, 'sslmode=disable: plain TCP')
  // The test server has no TLS: a client told to require it must refuse to go on.
  await t.rejects(openPgState(`${url}?sslmode=verify-full`, { poolSize: 1 }), /does not support SSL/)
})

t.test('a refresh token or code being used by another node is waited for, then seen used', async (t) => {
  const url = freshDatabase()
  const s = await openStore(t, url, 2)
  await s.putOAuthRefresh({ hash: 'h', family: 'f', client_id: 'c', resource: 'r', grant: 'g', expires: 9e12, used: null })
  await s.putOAuthCode({ hash: 'c', client_id: 'c', redirect_uri: 'http://127.0.0.1/cb', redirect_given: true, challenge: 'ch', resource: 'r', grant: 'g', expires: 9e12, used: null, family: null })
  const other = new pg.Client({ connectionString: url })
  await other.connect()
  t.teardown(() => other.end())
  /** Another node's use, its transaction held open until `commit`. */
  const held = async (sql: string): Promise<() => Promise<void>> => {
    await other.query('BEGIN')
    await other.query(sql)
    return async () => void (await other.query('COMMIT'))
  }
  const waiting = async () => {
    while (Number((await sql(url, "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"))[0]!.n) === 0) {
      await new Promise((r) => setTimeout(r, 20))
    }
  }
  let commit = await held("UPDATE oauth_refresh_tokens SET used_ms = 42 WHERE hash = 'h'")
  const refresh = s.useOAuthRefresh('h', 99)
  await waiting()
  await commit()
  t.equal((await refresh)!.used, 42, 'the refresh token: the other use is seen, so this one is a reuse')
  t.equal((await s.getOAuthRefresh('h'))!.used, 42, 'and the first use is kept')
  commit = await held("UPDATE oauth_codes SET used_ms = 42, family = 'theirs' WHERE hash = 'c'")
  const code = s.useOAuthCode('c', 'mine', 99)
  await waiting()
  await commit()
  t.match(await code, { used: 42, family: 'theirs' }, 'the code: a replay, naming the family to revoke')
})

t.test('text PostgreSQL cannot keep (NUL) is refused as bad input, changing nothing', async (t) => {
  const s = await openStore(t, freshDatabase(), 1)
  const share = { id: 'sh', owner: 'o', path: '/a\u0000b', kind: 'file', can_read: true, can_upload: false, can_write: false, password_hash: null, expire: null, sealed: 'x', created: 1 } as const
  const err = await s.putShare(share).catch((e: unknown) => e)
  t.ok(isApiError(err) && err.code === 'INVALID_INPUT', `INVALID_INPUT, not an internal error (got ${String(err)})`)
  t.equal(await s.getShare('sh'), null)
  const user = { name: 'u\u0000', password_hash: null, keys: [], connection: 'tmp', root: '/', permissions: FULL_ACCESS, created: 1 }
  t.match(await s.addGatewayUser(user).catch((e: unknown) => e), { code: 'INVALID_INPUT' }, 'in a transaction too')
  t.same(await s.listGatewayUsers(), [])
})
