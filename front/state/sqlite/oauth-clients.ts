/** @module front/state/sqlite/oauth-clients — OAuth clients in SQLite (core/state/oauth-clients.ts). */
import type Database from 'better-sqlite3'
import type { OAuthClientRecord, OAuthClientStore } from '../../../core/state.js'

interface OAuthClientRow {
  client_id: string
  name: string
  redirect_uris: string
  created_ms: number
  last_used_ms: number | null
}

const toOAuthClient = (r: OAuthClientRow): OAuthClientRecord => ({
  client_id: r.client_id,
  name: r.name,
  redirect_uris: JSON.parse(r.redirect_uris) as string[],
  created: r.created_ms,
  last_used: r.last_used_ms,
})

export function sqliteOAuthClients(db: Database.Database): OAuthClientStore {
  const q = {
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
  }
  return {
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
  }
}
