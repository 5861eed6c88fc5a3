/**
 * @module test/state/sqlite-state.test
 * The embedded SQLite state store: the shared store suite (test/state/store-suite.ts),
 * then what is SQLite's own: migrations recorded and idempotent, older files migrated.
 */
import Database from 'better-sqlite3'
import t from 'tap'
import { SCHEMA_VERSION, openSqliteState } from '../../front/state/sqlite-state.js'
import { storeSuite } from './store-suite.js'
import { READ_ONLY } from '../../core/permissions.js'

// Two stores on one state.db: two openers of one file, as two processes would be.
storeSuite(t, async (t) => {
  const dir = t.testdir()
  const a = await openSqliteState(dir)
  const b = await openSqliteState(dir)
  t.teardown(async () => {
    await a.close()
    await b.close()
  })
  return [a, b]
})

t.test('migrations run once and are recorded', async (t) => {
  const dir = t.testdir()
  await (await openSqliteState(dir)).close()
  const s = await openSqliteState(dir) // reopening does not re-run them
  await s.close()
  const db = new Database(`${dir}/state.db`, { readonly: true })
  t.same(db.prepare('SELECT version FROM schema_migrations ORDER BY version').all(), Array.from({ length: SCHEMA_VERSION }, (_, i) => ({ version: i + 1 })))
  db.close()
})

t.test('a database newer than this build is refused', async (t) => {
  const dir = t.testdir()
  await (await openSqliteState(dir)).close()
  const db = new Database(`${dir}/state.db`)
  db.prepare('INSERT INTO schema_migrations (version, applied_ms) VALUES (?, ?)').run(SCHEMA_VERSION + 1, Date.now())
  db.close()
  await t.rejects(openSqliteState(dir), /newer than this filegate/)
})

t.test('migration 2 keeps the gateway users of a version-1 database', async (t) => {
  const dir = t.testdir()
  const db = new Database(`${dir}/state.db`)
  db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_ms INTEGER NOT NULL)')
  db.exec(`CREATE TABLE gateway_users (
     name TEXT PRIMARY KEY, password_hash TEXT NOT NULL, connection TEXT NOT NULL, root TEXT NOT NULL,
     read_only INTEGER NOT NULL, created_ms INTEGER NOT NULL)`)
  for (const [table, cols] of [['revoked_tokens', 'id TEXT PRIMARY KEY, until_ms INTEGER NOT NULL'], ['shares', 'id TEXT PRIMARY KEY, owner TEXT, path TEXT, kind TEXT, can_read INTEGER, can_upload INTEGER, can_write INTEGER, password_hash TEXT, expire_ms INTEGER, sealed TEXT, created_ms INTEGER'], ['api_keys', 'id TEXT PRIMARY KEY, name TEXT, hash TEXT, origins TEXT, created_ms INTEGER, last_used_ms INTEGER']]) {
    db.exec(`CREATE TABLE ${table} (${cols})`)
  }
  db.prepare('INSERT INTO schema_migrations VALUES (1, 0)').run()
  db.prepare("INSERT INTO gateway_users VALUES ('old', 'scrypt$x', 'tmp', '/home', 1, 7)").run()
  db.close()
  const s = await openSqliteState(dir)
  t.teardown(() => s.close())
  t.same(await s.getGatewayUser('old'), { name: 'old', password_hash: 'scrypt$x', keys: [], connection: 'tmp', root: '/home', permissions: READ_ONLY, created: 7 }, 'a read-only user of before the bits reads only')
  t.equal(await s.updateGatewayUser('old', { password_hash: null }), true, 'the password may now be absent')
})
