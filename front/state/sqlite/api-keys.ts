/** @module front/state/sqlite/api-keys — API keys in SQLite (core/state/api-keys.ts). */
import type Database from 'better-sqlite3'
import type { ApiKeyRecord, ApiKeyStore } from '../../../core/state.js'

interface KeyRow {
  id: string
  name: string
  hash: string
  origins: string
  created_ms: number
  last_used_ms: number | null
}

const toKey = (r: KeyRow): ApiKeyRecord => ({
  id: r.id,
  name: r.name,
  hash: r.hash,
  origins: JSON.parse(r.origins) as string[],
  created: r.created_ms,
  last_used: r.last_used_ms,
})

export function sqliteApiKeys(db: Database.Database): ApiKeyStore {
  const q = {
    putKey: db.prepare(
      `INSERT OR REPLACE INTO api_keys (id, name, hash, origins, created_ms, last_used_ms)
       VALUES (@id, @name, @hash, @origins, @created_ms, @last_used_ms)`,
    ),
    keyByHash: db.prepare<[string], KeyRow>('SELECT * FROM api_keys WHERE hash = ?'),
    allKeys: db.prepare<[], KeyRow>('SELECT * FROM api_keys ORDER BY created_ms DESC, id'),
    touchKey: db.prepare('UPDATE api_keys SET last_used_ms = ? WHERE id = ?'),
    deleteKey: db.prepare('DELETE FROM api_keys WHERE id = ?'),
  }
  return {
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
  }
}
