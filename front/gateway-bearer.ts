/**
 * @module front/gateway-bearer
 * `GatewayContext.bearer`: what a bearer credential sent to an HTTP gateway (MCP)
 * grants. Resolvers are tried in turn; each answers for the tokens it recognises and
 * passes (undefined) on the others:
 * - a filegate session token (`POST /api/session`): the session's storage and root,
 *   exactly as the HTTP API serves it, and share links as `POST /api/share` makes them;
 * - access tokens of filegate's OAuth authorization server are added by their own
 *   resolver (bound to the resource they were issued for).
 * The caller closes the returned `fs` when its request is over.
 */
import type { BearerResult, ShareRequest } from '../core/gateway.js'
import { ApiError } from '../core/api-error.js'
import type { Permissions } from '../core/permissions.js'
import type { View } from '../core/view.js'
import type { BackendSpec } from '../core/backend.js'
import { sessionPermissions } from './access.js'
import { type Session, SessionEnded, type SessionService } from './sessions.js'
import type { ShareService } from './shares.js'

export interface BearerRequest {
  readonly resource: string
  readonly address: string
  readonly requestId: string
}

/** Answers for the tokens it recognises; undefined: not one of mine. */
export type BearerResolver = (token: string, req: BearerRequest) => Promise<BearerResult | undefined>

export function chainBearers(resolvers: readonly BearerResolver[]): (token: string, req: BearerRequest) => Promise<BearerResult> {
  return async (token, req) => {
    for (const r of resolvers) {
      const res = await r(token, req)
      if (res) return res
    }
    return { ok: false, reason: 'invalid', message: 'the bearer token is not one filegate issued' }
  }
}

export interface SessionBearerDeps {
  readonly sessions: SessionService
  readonly shares: ShareService
  /** `permissions`: the session's (a gateway user's bits; everything for other sessions). */
  readonly openFs: (spec: BackendSpec, permissions: Permissions) => Promise<View>
}

/** A session's view and share maker (also used by the OAuth resolver, whose grants are sessions). */
export async function sessionGrant(session: Session, deps: SessionBearerDeps, req: BearerRequest): Promise<BearerResult> {
  const rights = sessionPermissions(session)
  const fs = await deps.openFs(session.spec, rights)
  if (!rights.can_share) return { ok: true, subject: session.backendID, fs }
  return {
    ok: true,
    subject: session.backendID,
    fs,
    share: async (path: string, o: ShareRequest) => {
      const view = await deps.shares.create(session, fs, { ...o, path }, req.requestId, new AbortController().signal)
      return { id: view.id, kind: view.type }
    },
  }
}

/** Filegate session tokens. Any token that is not one (a malformed or foreign seal) is passed on. */
export function sessionBearer(deps: SessionBearerDeps): BearerResolver {
  return async (token, req) => {
    let session: Session
    try {
      session = await deps.sessions.authenticate(`Bearer ${token}`)
    } catch (err) {
      if (err instanceof SessionEnded) return { ok: false, reason: err.why === 'expired' ? 'expired' : 'invalid', message: err.message }
      if (!(err instanceof ApiError)) throw err
      return undefined // not a session token: another resolver's
    }
    return sessionGrant(session, deps, req)
  }
}
