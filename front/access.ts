/**
 * @module front/access
 * Who is calling and what they may do: resolved once per request, on the main
 * thread, before anything reaches a worker. Token sessions may do everything in
 * their storage, but a gateway user's (`sessionPermissions`); share links
 * (front/shares.ts) narrow `permissions` and the root.
 */
import { ApiError } from '../core/api-error.js'
import type { Storage } from '../core/storage.js'
import type { Session } from './sessions.js'

/** As listed in every `ls` answer (docs/api.md, "Files"): all keys, always. */
export interface Permissions {
  readonly can_read: boolean
  readonly can_create_file: boolean
  readonly can_create_directory: boolean
  readonly can_rename: boolean
  readonly can_move: boolean
  readonly can_upload: boolean
  readonly can_delete: boolean
  readonly can_share: boolean
}

export const FULL_ACCESS: Permissions = {
  can_read: true,
  can_create_file: true,
  can_create_directory: true,
  can_rename: true,
  can_move: true,
  can_upload: true,
  can_delete: true,
  can_share: true,
}

/** Reading only: what a read-only gateway user's session may do. */
export const READ_ONLY: Permissions = {
  can_read: true,
  can_create_file: false,
  can_create_directory: false,
  can_rename: false,
  can_move: false,
  can_upload: false,
  can_delete: false,
  can_share: false,
}

/**
 * A session's rights. A gateway user's session has its user's (read-only or not), and
 * never makes share links: a link would outlive the user it came from, whose removal
 * or new password must end everything it logged in.
 */
export function sessionPermissions(session: Session): Permissions {
  if (!session.gateway) return FULL_ACCESS
  return session.gateway.readOnly ? READ_ONLY : { ...FULL_ACCESS, can_share: false }
}

export interface Access {
  readonly session: Session
  readonly storage: Storage
  readonly permissions: Permissions
  /** May an upload replace an existing file? A share with can_upload but not can_write may only create. */
  readonly may_replace: boolean
}

/** @throws ApiError FORBIDDEN unless the caller has `right`. */
export function need(access: Access, right: keyof Permissions): void {
  if (!access.permissions[right]) throw new ApiError('FORBIDDEN', `this credential does not allow ${right.replace('can_', '').replace('_', ' ')}`)
}
