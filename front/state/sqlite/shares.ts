/** @module front/state/sqlite/shares — share links in SQLite (core/state/shares.ts). */
import type Database from 'better-sqlite3'
import type { ShareRecord, ShareStore } from '../../../core/state.js'

interface ShareRow {
  id: string
  owner: string
  path: string
  kind: string
  can_read: number
  can_upload: number
  can_write: number
  password_hash: string | null
  expire_ms: number | null
  sealed: string
  created_ms: number
}

const toShare = (r: ShareRow): ShareRecord => ({
  id: r.id,
  owner: r.owner,
  path: r.path,
  kind: r.kind === 'file' ? 'file' : 'directory',
  can_read: r.can_read === 1,
  can_upload: r.can_upload === 1,
  can_write: r.can_write === 1,
  password_hash: r.password_hash,
  expire: r.expire_ms,
  sealed: r.sealed,
  created: r.created_ms,
})

export function sqliteShares(db: Database.Database): ShareStore {
  const q = {
    putShare: db.prepare(
      `INSERT OR REPLACE INTO shares (id, owner, path, kind, can_read, can_upload, can_write, password_hash, expire_ms, sealed, created_ms)
       VALUES (@id, @owner, @path, @kind, @can_read, @can_upload, @can_write, @password_hash, @expire_ms, @sealed, @created_ms)`,
    ),
    getShare: db.prepare<[string], ShareRow>('SELECT * FROM shares WHERE id = ?'),
    allShares: db.prepare<[], ShareRow>('SELECT * FROM shares ORDER BY created_ms DESC, id'),
    ownerShares: db.prepare<[string], ShareRow>('SELECT * FROM shares WHERE owner = ? ORDER BY created_ms DESC, id'),
    deleteShare: db.prepare('DELETE FROM shares WHERE id = ?'),
  }
  return {
    async putShare(s) {
      q.putShare.run({
        id: s.id,
        owner: s.owner,
        path: s.path,
        kind: s.kind,
        can_read: s.can_read ? 1 : 0,
        can_upload: s.can_upload ? 1 : 0,
        can_write: s.can_write ? 1 : 0,
        password_hash: s.password_hash,
        expire_ms: s.expire,
        sealed: s.sealed,
        created_ms: s.created,
      })
    },
    async getShare(id) {
      const r = q.getShare.get(id)
      return r ? toShare(r) : null
    },
    async listShares(owner) {
      return (owner === undefined ? q.allShares.all() : q.ownerShares.all(owner)).map(toShare)
    },
    async deleteShare(id) {
      return q.deleteShare.run(id).changes > 0
    },
  }
}
