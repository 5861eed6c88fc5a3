/** @module front/state/sqlite/gateway-users — gateway users and their SSH keys in SQLite (core/state/gateway-users.ts). */
import type Database from 'better-sqlite3'
import type { AuthorizedKeyRecord, GatewayUserRecord, GatewayUserStore } from '../../../core/state.js'
import { changesNothing, storedUserPermissions, toBits } from '../../../core/permissions.js'

interface UserRow {
  name: string
  password_hash: string | null
  connection: string
  root: string
  read_only: number
  /** The bits (core/permissions.ts `toBits`); NULL: a user of before them, whose read_only flag says. */
  permissions: number | null
  created_ms: number
}
interface UserKeyRow {
  user: string
  fingerprint: string
  type: string
  blob: string
  comment: string
  created_ms: number
}

const toUserKey = (r: UserKeyRow): AuthorizedKeyRecord => ({ fingerprint: r.fingerprint, type: r.type, blob: r.blob, comment: r.comment, created: r.created_ms })
const toUser = (r: UserRow, keys: readonly UserKeyRow[]): GatewayUserRecord => ({
  name: r.name,
  password_hash: r.password_hash,
  keys: keys.map(toUserKey),
  connection: r.connection,
  root: r.root,
  permissions: storedUserPermissions(r.permissions, r.read_only === 1),
  created: r.created_ms,
})
const keyRow = (user: string, k: AuthorizedKeyRecord): UserKeyRow => ({ user, fingerprint: k.fingerprint, type: k.type, blob: k.blob, comment: k.comment, created_ms: k.created })

export function sqliteGatewayUsers(db: Database.Database): GatewayUserStore {
  const q = {
    addUser: db.prepare(
      `INSERT OR IGNORE INTO gateway_users (name, password_hash, connection, root, read_only, permissions, created_ms)
       VALUES (@name, @password_hash, @connection, @root, @read_only, @permissions, @created_ms)`,
    ),
    getUser: db.prepare<[string], UserRow>('SELECT * FROM gateway_users WHERE name = ?'),
    allUsers: db.prepare<[], UserRow>('SELECT * FROM gateway_users ORDER BY name'),
    deleteUser: db.prepare('DELETE FROM gateway_users WHERE name = ?'),
    // One statement: a field left out (its flag 0, its bits NULL) keeps its value.
    update: db.prepare(
      `UPDATE gateway_users SET password_hash = CASE WHEN @set_password THEN @password_hash ELSE password_hash END,
       permissions = COALESCE(@permissions, permissions), read_only = COALESCE(@read_only, read_only) WHERE name = @name`,
    ),
    addUserKey: db.prepare(
      `INSERT OR IGNORE INTO gateway_user_keys (user, fingerprint, type, blob, comment, created_ms)
       VALUES (@user, @fingerprint, @type, @blob, @comment, @created_ms)`,
    ),
    userKeys: db.prepare<[string], UserKeyRow>('SELECT * FROM gateway_user_keys WHERE user = ? ORDER BY created_ms, rowid'),
    allUserKeys: db.prepare<[], UserKeyRow>('SELECT * FROM gateway_user_keys ORDER BY created_ms, rowid'),
    deleteUserKey: db.prepare('DELETE FROM gateway_user_keys WHERE user = ? AND fingerprint = ?'),
    deleteUserKeys: db.prepare('DELETE FROM gateway_user_keys WHERE user = ?'),
    // A user's S3 keys (front/state/sqlite/s3-keys.ts) go with the user, as PostgreSQL's foreign keys make them.
    deleteUserS3Keys: db.prepare('DELETE FROM s3_keys WHERE user = ?'),
  }
  const addUser = db.transaction((u: GatewayUserRecord): boolean => {
    const r = q.addUser.run({
      name: u.name,
      password_hash: u.password_hash,
      connection: u.connection,
      root: u.root,
      // Kept for a filegate of before the bits (a downgrade): read-only when nothing may change.
      read_only: changesNothing(u.permissions) ? 1 : 0,
      permissions: toBits(u.permissions),
      created_ms: u.created,
    })
    if (r.changes === 0) return false
    for (const k of u.keys) q.addUserKey.run(keyRow(u.name, k))
    return true
  })
  const deleteUser = db.transaction((name: string): boolean => {
    q.deleteUserKeys.run(name)
    q.deleteUserS3Keys.run(name)
    return q.deleteUser.run(name).changes > 0
  })
  const addUserKey = db.transaction((name: string, k: AuthorizedKeyRecord): 'added' | 'duplicate' | 'no-user' => {
    if (q.getUser.get(name) === undefined) return 'no-user'
    return q.addUserKey.run(keyRow(name, k)).changes > 0 ? 'added' : 'duplicate'
  })
  return {
    async addGatewayUser(u) {
      return addUser(u)
    },
    async getGatewayUser(name) {
      const r = q.getUser.get(name)
      return r ? toUser(r, q.userKeys.all(name)) : null
    },
    async listGatewayUsers() {
      const keys = new Map<string, UserKeyRow[]>()
      for (const k of q.allUserKeys.all()) {
        const list = keys.get(k.user)
        if (list) list.push(k)
        else keys.set(k.user, [k])
      }
      return q.allUsers.all().map((r) => toUser(r, keys.get(r.name) ?? []))
    },
    async deleteGatewayUser(name) {
      return deleteUser(name)
    },
    async updateGatewayUser(name, change) {
      const p = change.permissions
      return (
        q.update.run({
          name,
          set_password: change.password_hash === undefined ? 0 : 1,
          password_hash: change.password_hash ?? null,
          permissions: p === undefined ? null : toBits(p),
          read_only: p === undefined ? null : changesNothing(p) ? 1 : 0,
        }).changes > 0
      )
    },
    async addGatewayUserKey(name, key) {
      return addUserKey(name, key)
    },
    async deleteGatewayUserKey(name, fingerprint) {
      return q.deleteUserKey.run(name, fingerprint).changes > 0
    },
  }
}
