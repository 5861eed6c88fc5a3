/**
 * @module core/request-context
 * What travels with every call on a view (core/view.ts re-exports it): the request's
 * id, its cancel signal and who asks.
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
