/**
 * @module core/request-context
 * What travels with every call on a storage or a view: the request's id, its cancel
 * signal and who asks. Its own file so that core/storage.ts (which imports the messages)
 * and core/protocol-fs.ts (which the messages import) share it without a cycle.
 */

/** Per-request context: aborting `signal` cancels the request (its op or its transfer). */
export interface RequestContext {
  readonly requestId: string
  readonly signal: AbortSignal
  /** Who asks, for the fairness limits on concurrent transfers (gateways/connection/transfer-limits.ts). */
  readonly client?: ClientIdentity
}

/** The network address and the credential (a session, a share...) a request comes with. */
export interface ClientIdentity {
  readonly address: string
  readonly credential: string
}
