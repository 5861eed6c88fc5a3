/**
 * @module front/access
 * Who is calling and what they may do: resolved once per request, on the main
 * thread, before anything reaches a worker. Token sessions may do everything in
 * their storage, but a gateway user's (`sessionPermissions`); share links
 * (front/shares.ts) narrow `permissions` and the root.
 */
import { ApiError } from '../core/api-error.js'
import { FULL_ACCESS, type Permissions } from '../core/permissions.js'
import type { Storage } from '../core/storage.js'
import type { Session } from './sessions.js'

export { FULL_ACCESS, type Permissions, READ_ONLY } from '../core/permissions.js'

/**
 * A session's rights. A gateway user's session has its user's bits (the same the user
 * has at SFTP, S3 and MCP: core/permissions.ts), but never makes share links: a link
 * would outlive the user it came from, whose removal or new password must end
 * everything it logged in.
 */
export function sessionPermissions(session: Session): Permissions {
  if (!session.gateway) return FULL_ACCESS
  return { ...session.gateway.permissions, can_share: false }
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
