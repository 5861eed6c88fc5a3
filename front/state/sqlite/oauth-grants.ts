/** @module front/state/sqlite/oauth-grants — OAuth authorization codes and refresh tokens in SQLite (core/state/oauth-grants.ts). */
import type Database from 'better-sqlite3'
import type { OAuthCodeRecord, OAuthGrantStore, OAuthRefreshRecord } from '../../../core/state.js'

interface OAuthRefreshRow {
  hash: string
  family: string
  client_id: string
  resource: string
  grant: string
  expires_ms: number
  used_ms: number | null
}
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

const toOAuthRefresh = (r: OAuthRefreshRow): OAuthRefreshRecord => ({
  hash: r.hash,
  family: r.family,
  client_id: r.client_id,
  resource: r.resource,
  grant: r.grant,
  expires: r.expires_ms,
  used: r.used_ms,
})
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

export function sqliteOAuthGrants(db: Database.Database): OAuthGrantStore {
  const q = {
    putRefresh: db.prepare(
      `INSERT INTO oauth_refresh_tokens (hash, family, client_id, resource, grant, expires_ms, used_ms)
       VALUES (@hash, @family, @client_id, @resource, @grant, @expires_ms, @used_ms)`,
    ),
    getRefresh: db.prepare<[string], OAuthRefreshRow>('SELECT * FROM oauth_refresh_tokens WHERE hash = ?'),
    useRefresh: db.prepare('UPDATE oauth_refresh_tokens SET used_ms = ? WHERE hash = ? AND used_ms IS NULL'),
    deleteFamily: db.prepare('DELETE FROM oauth_refresh_tokens WHERE family = ? OR expires_ms <= ?'),
    putCode: db.prepare(
      `INSERT OR REPLACE INTO oauth_codes (hash, client_id, redirect_uri, redirect_given, challenge, resource, sealed_grant, expires_ms, used_ms, family)
       VALUES (@hash, @client_id, @redirect_uri, @redirect_given, @challenge, @resource, @sealed_grant, @expires_ms, @used_ms, @family)`,
    ),
    getCode: db.prepare<[string], OAuthCodeRow>('SELECT * FROM oauth_codes WHERE hash = ?'),
    useCode: db.prepare('UPDATE oauth_codes SET used_ms = ?, family = ? WHERE hash = ? AND used_ms IS NULL'),
    purgeCodes: db.prepare('DELETE FROM oauth_codes WHERE expires_ms < ?'),
  }
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
  return {
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
  }
}
