/**
 * @module gateways/s3/multipart
 * S3 multipart uploads over any storage: uploads.ts (the operations, records, Complete,
 * expiry), staging.ts (parts staged by a worker), route.ts (the query forms of the REST API),
 * xml.ts (the part list of Complete). docs/s3-gateway.md, "Multipart uploads".
 */
import { join } from 'node:path'
import type { GatewayContext } from '../../../core/gateway.js'
import type { HttpReply } from '../../../core/http.js'
import type { ObjectMeta } from '../meta/index.js'
import type { S3Request } from '../request.js'
import { multipartRoute } from './route.js'
import { MultipartUploads } from './uploads.js'

export { MAX_PART_BYTES, MAX_PART_NUMBER, MIN_PART_BYTES, MultipartUploads, type MultipartOptions } from './uploads.js'
export { multipartRoute } from './route.js'

export interface Multipart {
  /** Answers a multipart request (`?uploads`, `?uploadId=`); undefined: the request is not one. */
  route(r: S3Request): Promise<HttpReply | undefined>
  /** Stops the periodic sweep. */
  stop(): void
}

/**
 * The multipart side of the S3 gateway, for its context: parts staged under
 * `<staging_dir>/s3-multipart/` (where every node reaches) by the pool's threads
 * (core/staged.ts), records in the state store;
 * swept now (in the background) and periodically.
 */
export function createMultipart(ctx: Pick<GatewayContext, 'state' | 'stagingDir' | 'log' | 'stagingQuota' | 'staged'>, opts: { readonly expiryHours: number; readonly meta: Pick<ObjectMeta, 'put'> }): Multipart {
  const uploads = new MultipartUploads({
    state: ctx.state,
    staging: ctx.staged.area(join(ctx.stagingDir, 's3-multipart')),
    meta: opts.meta,
    expiryMs: opts.expiryHours * 3_600_000,
    log: (level, msg, fields) => ctx.log(level, msg, fields),
    quota: ctx.stagingQuota,
  })
  uploads.start().catch((err: unknown) => ctx.log('warn', 's3 multipart sweep failed', { error: String(err) }))
  return {
    route: (r) => multipartRoute(uploads, r, { log: (level, msg, fields) => ctx.log(level, msg, fields) }),
    stop: () => uploads.stop(),
  }
}
