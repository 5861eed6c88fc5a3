/** @module front/state/pg/oauth-clients — OAuth clients in PostgreSQL (core/state/oauth-clients.ts). */
import type { OAuthClientStore } from '../../../core/state.js'
import { type PgDb, json } from './db.js'

const CLIENT = 'client_id, name, redirect_uris, created_ms AS created, last_used_ms AS last_used'

export function pgOAuthClients({ query, one, count }: PgDb): OAuthClientStore {
  return {
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
  }
}
