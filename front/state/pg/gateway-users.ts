/** @module front/state/pg/gateway-users — gateway users and their SSH keys in PostgreSQL (core/state/gateway-users.ts). */
import type { GatewayUserRecord, GatewayUserStore } from '../../../core/state.js'
import { changesNothing, storedUserPermissions, toBits } from '../../../core/permissions.js'
import { type PgDb, isNoOwner } from './db.js'

const USER_KEYS = `COALESCE((SELECT json_agg(json_build_object('fingerprint', k.fingerprint, 'type', k.type, 'blob', k.blob, 'comment', k.comment, 'created', k.created_ms)
  ORDER BY k.created_ms, k.seq) FROM gateway_user_keys k WHERE k.user_name = u.name), '[]')`
const USER = `u.name, u.password_hash, ${USER_KEYS} AS keys, u.connection, u.root, u.read_only, u.permissions, u.created_ms AS created`

/** The permission bits as stored (core/permissions.ts `toBits`): NULL is a user of before them, whose read_only flag says. */
type UserRow = Omit<GatewayUserRecord, 'permissions'> & { read_only: boolean; permissions: number | null }
const toUser = ({ read_only, permissions, ...u }: UserRow): GatewayUserRecord => ({ ...u, permissions: storedUserPermissions(permissions, read_only) })

export function pgGatewayUsers({ one, all, changed, transaction }: PgDb): GatewayUserStore {
  return {
    addGatewayUser: (u) =>
      transaction(async (c) => {
        // The primary key decides between nodes adding the same name: the second waits for the first, then adds nothing.
        const added = await c.query(
          `INSERT INTO gateway_users (name, password_hash, connection, root, read_only, permissions, created_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)
           ON CONFLICT (name) DO NOTHING`,
          // read_only kept for a filegate of before the bits (a downgrade): true when nothing may change.
          [u.name, u.password_hash, u.connection, u.root, changesNothing(u.permissions), toBits(u.permissions), u.created],
        )
        if (added.rowCount === 0) return false
        for (const k of u.keys) {
          await c.query('INSERT INTO gateway_user_keys (user_name, fingerprint, type, blob, comment, created_ms) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING', [
            u.name,
            k.fingerprint,
            k.type,
            k.blob,
            k.comment,
            k.created,
          ])
        }
        return true
      }),
    getGatewayUser: async (name) => {
      const row = await one<UserRow>(`SELECT ${USER} FROM gateway_users u WHERE u.name = $1`, [name])
      return row && toUser(row)
    },
    listGatewayUsers: async () => (await all<UserRow>(`SELECT ${USER} FROM gateway_users u ORDER BY u.name`)).map(toUser),
    // Keys and S3 keys go with the user (ON DELETE CASCADE).
    deleteGatewayUser: (name) => changed('DELETE FROM gateway_users WHERE name = $1', [name]),
    // One statement: a field left out (its flag false, its bits NULL) keeps its value.
    updateGatewayUser: (name, { password_hash, permissions: p }) =>
      changed(
        `UPDATE gateway_users SET password_hash = CASE WHEN $1 THEN $2 ELSE password_hash END,
         permissions = COALESCE($3, permissions), read_only = COALESCE($4, read_only) WHERE name = $5`,
        [password_hash !== undefined, password_hash ?? null, p === undefined ? null : toBits(p), p === undefined ? null : changesNothing(p), name],
      ),
    async addGatewayUserKey(name, k) {
      try {
        const added = await changed(
          'INSERT INTO gateway_user_keys (user_name, fingerprint, type, blob, comment, created_ms) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING',
          [name, k.fingerprint, k.type, k.blob, k.comment, k.created],
        )
        return added ? 'added' : 'duplicate'
      } catch (err) {
        if (isNoOwner(err)) return 'no-user'
        throw err
      }
    },
    deleteGatewayUserKey: (name, fingerprint) => changed('DELETE FROM gateway_user_keys WHERE user_name = $1 AND fingerprint = $2', [name, fingerprint]),
  }
}
