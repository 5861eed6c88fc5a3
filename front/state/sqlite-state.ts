/**
 * @module front/state/sqlite-state
 * The embedded state store: one SQLite database (`state.db`) in the data directory's
 * state folder, through better-sqlite3. Its calls are synchronous and short (indexed
 * single-row statements on a local file, WAL mode), so they run inline on the main
 * thread behind the async StateStore interface that the PostgreSQL store shares.
 *
 * Each feature's records are in a file of their own under front/state/sqlite/ (one per
 * part of core/state/), over the one database this opens; the schema and its
 * migrations are front/state/sqlite/migrations.ts.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import type { StateStore } from '../../core/state.js'
import { sqliteApiKeys } from './sqlite/api-keys.js'
import { sqliteGatewayUsers } from './sqlite/gateway-users.js'
import { sqliteMcpSessions } from './sqlite/mcp-sessions.js'
import { migrate } from './sqlite/migrations.js'
import { sqliteOAuthClients } from './sqlite/oauth-clients.js'
import { sqliteOAuthGrants } from './sqlite/oauth-grants.js'
import { sqliteS3Keys } from './sqlite/s3-keys.js'
import { sqliteMultipart } from './sqlite/s3-multipart.js'
import { sqliteObjectMeta } from './sqlite/s3-objects.js'
import { sqliteShares } from './sqlite/shares.js'
import { sqliteThrottles } from './sqlite/throttles.js'
import { sqliteTokens } from './sqlite/tokens.js'
import { sqliteTusUploads } from './sqlite/tus-uploads.js'

export { SCHEMA_VERSION } from './sqlite/migrations.js'

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
  let open = true
  return {
    ...sqliteTokens(db),
    ...sqliteShares(db),
    ...sqliteApiKeys(db),
    ...sqliteGatewayUsers(db),
    ...sqliteS3Keys(db),
    ...sqliteObjectMeta(db),
    ...sqliteMultipart(db),
    ...sqliteOAuthClients(db),
    ...sqliteOAuthGrants(db),
    ...sqliteThrottles(db),
    ...sqliteMcpSessions(db),
    ...sqliteTusUploads(db),
    async close() {
      if (open) db.close()
      open = false
    },
  }
}
