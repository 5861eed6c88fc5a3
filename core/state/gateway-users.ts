/**
 * @module core/state/gateway-users
 * The protocol gateways' users and their SSH keys (front/gateway-login.ts, the admin API).
 * Removing a user removes its S3 keys too. Part of the state store (core/state.ts).
 */
import type { Permissions } from '../permissions.js'

/** An SSH public key a gateway user may log in with (docs/gateways.md). */
export interface AuthorizedKeyRecord {
  /** `SHA256:<base64, no padding>` of `blob`, as `ssh-keygen -l` prints it; unique per user. */
  readonly fingerprint: string
  /** The key's type, e.g. `ssh-ed25519`. */
  readonly type: string
  /** The key in SSH wire format, base64 (what an authorized_keys line holds). */
  readonly blob: string
  /** The comment of the authorized_keys line ('' when none). */
  readonly comment: string
  readonly created: number
}

/** A user of the protocol gateways (SFTP, S3), defined by the admin. */
export interface GatewayUserRecord {
  readonly name: string
  /** scrypt hash, or null: the user logs in with a key only. */
  readonly password_hash: string | null
  /** Public keys the user may log in with, oldest first. */
  readonly keys: readonly AuthorizedKeyRecord[]
  /** The label of a configured connection (or "tmp"). */
  readonly connection: string
  /** Canonical root path inside that connection. */
  readonly root: string
  /** What the user may do, at every door (core/permissions.ts); `read_only` in the admin API is a shorthand for reading only. */
  readonly permissions: Permissions
  readonly created: number
}

/** What `updateGatewayUser` changes: the fields given, nothing else. */
export interface GatewayUserChange {
  readonly password_hash?: string | null
  readonly permissions?: Permissions
}

export interface GatewayUserStore {
  /** @returns false when a user of that name exists already (nothing changed) */
  addGatewayUser(user: GatewayUserRecord): Promise<boolean>
  getGatewayUser(name: string): Promise<GatewayUserRecord | null>
  listGatewayUsers(): Promise<GatewayUserRecord[]>
  /** Removes the user with its authorized keys and S3 keys. @returns false when there was no such user */
  deleteGatewayUser(name: string): Promise<boolean>
  /**
   * Changes what `change` names, in one write: the password hash (null removes it), the
   * permission bits (all eight, as they are to be). @returns false when there was no such user
   */
  updateGatewayUser(name: string, change: GatewayUserChange): Promise<boolean>
  /** @returns 'duplicate' when the user has a key of that fingerprint already (nothing changed) */
  addGatewayUserKey(name: string, key: AuthorizedKeyRecord): Promise<'added' | 'duplicate' | 'no-user'>
  /** @returns false when the user has no key of that fingerprint */
  deleteGatewayUserKey(name: string, fingerprint: string): Promise<boolean>
}
