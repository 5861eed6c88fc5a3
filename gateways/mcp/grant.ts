/**
 * @module gateways/mcp/grant
 * What one HTTP request's bearer credential grants (core/gateway.ts, `BearerResult`),
 * carried to the tools with the JSON-RPC messages of that request: the transports pass
 * it as the SDK's `authInfo`, so each tool acts with the credential that asked for it,
 * never another one of the session.
 */
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js'
import type { BearerResult } from '../../core/gateway.js'
import type { View } from '../../core/view.js'

type Ok = Extract<BearerResult, { ok: true }>

export interface Grant {
  /** Who acts (a session's backend id, an OAuth subject): what a session is bound to. */
  readonly subject: string
  readonly fs: View
  readonly share: Ok['share']
  /** The HTTP request's id, for the logs. */
  readonly requestId: string
  /** Closes `fs` once: when the request's messages are answered. */
  readonly release: () => void
}

export function grantFrom(res: Ok, requestId: string): Grant {
  let released = false
  return {
    subject: res.subject,
    fs: res.fs,
    share: res.share,
    requestId,
    release: () => {
      if (released) return
      released = true
      res.fs.close()
    },
  }
}

export function authInfoOf(grant: Grant): AuthInfo {
  // `token` is not needed past the check that made the grant: it is not kept.
  return { token: '', clientId: grant.subject, scopes: [], extra: { grant } }
}

export function grantOf(authInfo: AuthInfo | undefined): Grant {
  const grant = authInfo?.extra?.grant as Grant | undefined
  if (grant === undefined) throw new Error('an MCP message came without the grant of its request')
  return grant
}
