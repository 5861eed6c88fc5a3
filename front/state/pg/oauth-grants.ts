/** @module front/state/pg/oauth-grants — OAuth authorization codes and refresh tokens in PostgreSQL (core/state/oauth-grants.ts). */
import type { OAuthCodeRecord, OAuthGrantStore, OAuthRefreshRecord } from '../../../core/state.js'
import type { PgDb } from './db.js'

const REFRESH = 'hash, family, client_id, resource, grant_sealed AS "grant", expires_ms AS expires, used_ms AS used'

export function pgOAuthGrants({ query, one, count }: PgDb): OAuthGrantStore {
  return {
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
  }
}
