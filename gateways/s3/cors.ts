/**
 * @module gateways/s3/cors
 * CORS on the S3 endpoint, as S3 answers it for a bucket whose CORS rule is the
 * service's `cors.origins` (docs/s3-gateway.md, "Browsers"). A preflight (OPTIONS)
 * carries no signature and is never a login: it is answered here, before
 * authentication, so a web page's preflights can never count as failed logins.
 * - no Origin, or no Access-Control-Request-Method: 400, as S3;
 * - an origin not listed (or none listed at all): 403, as S3 for a bucket whose CORS
 *   configuration does not allow it (or that has none);
 * - a listed origin: 200 with the methods S3 objects take and the headers asked for.
 * Every other answer to a listed origin carries Access-Control-Allow-Origin and
 * exposes the headers clients read (ETag, the request ids, the object's metadata).
 */
import type { HttpReply, HttpRequest } from '../../core/http.js'
import { S3Error } from './errors.js'

const METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'HEAD']
const EXPOSE = [
  'ETag', 'x-amz-request-id', 'x-amz-id-2', 'x-amz-version-id', 'Content-Length', 'Content-Range', 'Content-Type', 'Content-Disposition',
  'Content-Encoding', 'Content-Language', 'Cache-Control', 'Expires', 'Last-Modified', 'Accept-Ranges',
].join(', ')
/** How long a browser may keep a preflight's answer. */
const MAX_AGE_S = '600'
/** A header list as browsers send it in Access-Control-Request-Headers. */
const HEADER_LIST = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*,\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+)*$/

export type OriginPolicy = (origin: string) => boolean

/** The policy of a list of origins (exact, as browsers send them). */
export const listedOrigins = (origins: readonly string[]): OriginPolicy => {
  const set = new Set(origins)
  return (o) => set.has(o)
}

const forbidden = (none: boolean, method: string): S3Error =>
  new S3Error(
    'AccessForbidden',
    none
      ? 'CORSResponse: CORS is not enabled for this bucket.'
      : 'CORSResponse: This CORS request is not allowed. This is usually because the evaluation of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource\'s CORS spec.',
    403,
    { Method: method, ResourceType: 'OBJECT' },
  )

/**
 * The answer to a preflight.
 * @param anyListed whether any origin is listed (S3 says "not enabled" when none is)
 * @throws S3Error (400, 403) in S3's words
 */
export function preflight(req: HttpRequest, allowed: OriginPolicy, anyListed: boolean): HttpReply {
  const origin = req.header('origin')
  if (origin === undefined || origin === '') throw new S3Error('BadRequest', 'Insufficient information. Origin request header needed.', 400)
  const method = req.header('access-control-request-method')
  if (method === undefined || !METHODS.includes(method)) throw new S3Error('BadRequest', 'Invalid Access-Control-Request-Method header.', 400)
  const asked = req.header('access-control-request-headers')
  if (asked !== undefined && asked.trim() !== '' && !HEADER_LIST.test(asked.trim())) throw forbidden(false, method)
  if (!allowed(origin)) throw forbidden(!anyListed, method)
  return {
    status: 200,
    headers: {
      'access-control-allow-origin': origin,
      'access-control-allow-methods': METHODS.join(', '),
      // Every header may be sent (S3's `AllowedHeader: *`): the signature says which count.
      ...(asked !== undefined && asked.trim() !== '' ? { 'access-control-allow-headers': asked.trim() } : {}),
      'access-control-expose-headers': EXPOSE,
      'access-control-max-age': MAX_AGE_S,
      vary: 'Origin, Access-Control-Request-Headers, Access-Control-Request-Method',
    },
  }
}

/** The CORS headers of a (non-preflight) answer to a listed origin; empty otherwise. */
export function corsHeaders(req: HttpRequest, allowed: OriginPolicy): Record<string, string> {
  const origin = req.header('origin')
  if (origin === undefined || !allowed(origin)) return {}
  return { 'access-control-allow-origin': origin, 'access-control-expose-headers': EXPOSE, vary: 'Origin' }
}
