/**
 * @module front/access
 * Who is calling: resolved once per request, on the main thread, before anything
 * reaches a worker, as the session and its view (core/view.ts), which checks every
 * operation against the caller's rights. Token sessions may do everything in their
 * storage, but a gateway user's (`sessionPermissions`); share links (front/shares.ts)
 * get a view narrowed to the share's folder and rights.
 */
import type { BackendSpec } from '../core/backend.js'
import { FULL_ACCESS, type Permissions } from '../core/permissions.js'
import type { View } from '../core/view.js'
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
  /** The caller's view: its storage from its root, with its rights (`view.permissions`). */
  readonly view: View
}

/**
 * Opens an HTTP caller's view (gateways/connection/view.ts, with the service's transfer
 * limits): of `spec` from `root` (default `/`), `only` its one file for a file share;
 * `login`: whose share of the listing snapshots its `ls` pages count against.
 */
export type OpenHttpView = (o: {
  readonly spec: BackendSpec
  readonly key?: string
  readonly permissions: Permissions
  readonly login: string
  readonly root?: string
  readonly only?: string | null
}) => Promise<View>
