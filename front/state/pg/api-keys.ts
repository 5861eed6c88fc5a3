/** @module front/state/pg/api-keys — API keys in PostgreSQL (core/state/api-keys.ts). */
import type { ApiKeyStore } from '../../../core/state.js'
import { type PgDb, json } from './db.js'

const API_KEY = 'id, name, hash, origins, created_ms AS created, last_used_ms AS last_used'

export function pgApiKeys({ query, one, all, changed }: PgDb): ApiKeyStore {
  return {
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
  }
}
