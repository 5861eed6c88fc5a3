/**
 * @module core/state/s3-keys
 * Gateway users' S3 access keys (front/s3-keys.ts, docs/s3-keys.md). Part of the state store
 * (core/state.ts).
 */
import type { Permissions } from '../permissions.js'

/**
 * An S3 access key of a gateway user (docs/s3-keys.md): the id is public, the secret
 * is kept sealed under the server secret (S3's signatures need it in clear to be
 * checked) and never returned after its creation.
 */
export interface S3KeyRecord {
  /** The access key id: 20 characters of A-Z and 0-9, unique. */
  readonly id: string
  /** The gateway user it acts as. */
  readonly user: string
  /** The secret access key, sealed under the server secret. */
  readonly sealed: string
  /** Narrows the user's permissions for requests signed with this key (never widens them); null: the user's. */
  readonly permissions: Permissions | null
  readonly created: number
  readonly last_used: number | null
}

export interface S3KeyStore {
  /** @returns 'no-user' when there is no such gateway user (nothing stored) */
  addS3Key(key: S3KeyRecord): Promise<'added' | 'no-user'>
  getS3Key(id: string): Promise<S3KeyRecord | null>
  /** A user's S3 keys, oldest first. */
  listS3Keys(user: string): Promise<S3KeyRecord[]>
  /** Records a use (best effort; stores may coarsen it). */
  touchS3Key(id: string, atMs: number): Promise<void>
  /** Sets the bits a key narrows its user's to (null: its user's). @returns false when `user` has no key `id` */
  setS3KeyPermissions(user: string, id: string, permissions: Permissions | null): Promise<boolean>
  /** @returns false when `user` has no key `id` */
  deleteS3Key(user: string, id: string): Promise<boolean>
}
