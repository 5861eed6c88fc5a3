/**
 * @module gateways/s3/caller
 * Who a request comes from, as authentication (gateways/s3/auth/) hands it over,
 * and the signature of that step, so the gateway can be started with it.
 */
import type { GatewayLogin } from '../../core/gateway.js'
import type { HttpRequest } from '../../core/http.js'
import type { ProtocolFs } from '../../core/protocol-fs.js'

export interface S3Caller {
  readonly accessKeyId: string
  readonly user: string
  /** The key's user's view; the gateway closes it when the request is over. */
  readonly fs: ProtocolFs
  /** The payload, decoded and verified as it streams: throws an S3Error at its end on a mismatch (commit only after it completed). */
  readonly body: AsyncIterable<Uint8Array>
  /** The decoded payload's length when known. */
  readonly contentLength: number | null
}

/** Checks a request's signature; throws an S3Error (AccessDenied, SignatureDoesNotMatch...) when it fails. */
export type Authenticate = (req: HttpRequest, login: GatewayLogin, opts: { readonly region: string }) => Promise<S3Caller>
