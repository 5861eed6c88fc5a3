/**
 * @module gateways/s3/auth
 * Who sends an S3 request, and its payload as checked while it streams (docs/s3-keys.md).
 *
 * `authenticate` reads the request's Signature V4 (Authorization header, or a presigned
 * URL's `X-Amz-*` query parameters, which the router then ignores), checks everything
 * that needs no secret (gateways/s3/auth/sigv4.ts), reads the payload's claims
 * (gateways/s3/auth/payload.ts), and logs in with the access key id: the login service
 * looks the key up and hands its secret to `verify`, which checks the signature and
 * keeps the signing key for the chunk signatures of an aws-chunked body. Unsigned
 * requests are refused: this endpoint has no anonymous access.
 */
import type { GatewayLogin } from '../../../core/gateway.js'
import type { HttpRequest } from '../../../core/http.js'
import type { View } from '../../../core/view.js'
import { S3Error } from '../errors.js'
import { checkedPayload, planPayload } from './payload.js'
import { isSigned, keyIfSigned, readClaims } from './sigv4.js'

export interface S3Caller {
  readonly accessKeyId: string
  readonly user: string
  /** The key's user's view (connection, root, read-only flag); the caller closes it when the request is over. */
  readonly fs: View
  /**
   * The payload, decoded (aws-chunked) and verified as it streams: throws S3Error at its
   * END (before the consumer commits anything) when a chunk signature, the signed payload
   * hash, Content-MD5 or a trailing checksum does not match. Consumers commit only after
   * the iterable completed.
   */
  readonly body: AsyncIterable<Uint8Array>
  /**
   * `body` for a consumer that checks the signed SHA-256 (`sha256`, hex; null: none was
   * signed) itself, where it writes the bytes, before it commits them (PutObject: the
   * worker that writes them, off the main thread); everything else is checked as in `body`.
   * A request's payload is read once: through `body` or through this.
   */
  payload(): { readonly body: AsyncIterable<Uint8Array>; readonly sha256: string | null }
  /** The decoded payload length when known (x-amz-decoded-content-length or Content-Length), else null. */
  readonly contentLength: number | null
}

/**
 * @param opts.region the region requests must be signed for ('*': any)
 * @throws S3Error (AccessDenied, SignatureDoesNotMatch, InvalidAccessKeyId, RequestTimeTooSkewed, SlowDown, ...)
 */
export async function authenticate(req: HttpRequest, login: GatewayLogin, opts: { region: string; now?: () => number }): Promise<S3Caller> {
  if (!isSigned(req)) throw new S3Error('AccessDenied', 'Access Denied', 403)
  const claims = await readClaims(req, { region: opts.region, now: opts.now?.() ?? Date.now() })
  const plan = planPayload(req, claims.payloadHash, claims.presigned)
  // Set by `verify` (TypeScript cannot see a callback assign them).
  let key = null as Buffer | null
  let checked = false as boolean
  const r = await login.login({
    door: 's3',
    user: claims.accessKeyId,
    address: req.remoteAddress,
    requestId: req.requestId,
    signature: {
      verify: (secret) => {
        checked = true
        key = keyIfSigned(claims, secret)
        return key !== null
      },
    },
  })
  if (!r.ok) {
    if (r.reason === 'throttled') throw new S3Error('SlowDown', 'Please reduce your request rate: too many failed logins from this address.', 503)
    if (r.reason === 'unavailable') throw new S3Error('ServiceUnavailable', r.message, 503)
    if (!checked) throw new S3Error('InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.', 403, { AWSAccessKeyId: claims.accessKeyId })
    throw new S3Error('SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided. Check your key and signing method.', 403, {
      AWSAccessKeyId: claims.accessKeyId,
      StringToSign: claims.stringsToSign[0]!,
      SignatureProvided: claims.signature,
    })
  }
  const signing = { key: key!, longDate: claims.longDate, scope: claims.scope, seed: claims.signature }
  return {
    accessKeyId: claims.accessKeyId,
    user: r.user,
    fs: r.fs,
    body: checkedPayload(req.body, plan, signing),
    payload: () => ({ body: checkedPayload(req.body, plan, signing, true), sha256: plan.sha256 }),
    contentLength: plan.length,
  }
}
