/**
 * @module core/state/shares
 * Share links (front/shares.ts, docs/api.md "Shares"). Part of the state store
 * (core/state.ts).
 */

/** A share link (docs/api.md, "Shares"). */
export interface ShareRecord {
  /** Random, URL-safe, at least 64 bits. */
  readonly id: string
  /** The backendID of the session that created it: its owner. */
  readonly owner: string
  /** Canonical path inside the owner's storage; it becomes `/` for the share's users. */
  readonly path: string
  /** What `path` was when the share was created. */
  readonly kind: 'file' | 'directory'
  readonly can_read: boolean
  readonly can_upload: boolean
  readonly can_write: boolean
  /** scrypt hash (front/passwords.ts), or null: no password. */
  readonly password_hash: string | null
  /** Epoch ms after which the share is GONE; null: never. */
  readonly expire: number | null
  /** The owner's backend spec and key, sealed under the server secret. Never returned to a client. */
  readonly sealed: string
  readonly created: number
}

export interface ShareStore {
  putShare(share: ShareRecord): Promise<void>
  getShare(id: string): Promise<ShareRecord | null>
  /** All shares, or those of one owner; newest first. */
  listShares(owner?: string): Promise<ShareRecord[]>
  /** @returns false when there was no such share */
  deleteShare(id: string): Promise<boolean>
}
