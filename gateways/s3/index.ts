/**
 * @module gateways/s3
 * The S3 gateway (docs/s3-gateway.md): an S3-compatible endpoint on a port of its own,
 * served by the API's HTTP engine (GatewayContext.listenHttp), in front of any storage.
 * A request's key (access key id) names a gateway user; the user's root holds the
 * buckets (its top-level folders) and their objects.
 */
import type { Gateway, GatewayContext, HttpListener } from '../../core/gateway.js'
import { createS3Handler, errorReply, s3Route } from './handler.js'
import { ObjectMeta } from './meta/index.js'
import { type Multipart, createMultipart } from './multipart/index.js'

export interface S3GatewayOptions {
  /** 0 picks a free port (the gateway's `port` tells which). */
  readonly port: number
  readonly host: string
  /** The region clients sign for and GetBucketLocation answers. */
  readonly region: string
  /** Virtual-hosted style for `<bucket>.<baseDomain>`; null: path-style only. */
  readonly baseDomain: string | null
  /** Multipart uploads not completed within this many hours of their creation are removed (default 24). */
  readonly multipartExpiryHours?: number
  /** Time requests in flight get to finish at a stop that does not say (default 5 s). */
  readonly graceMs?: number
  /** Browser origins allowed (the service's `cors.origins`, gateways/s3/cors.ts); default none. */
  readonly corsOrigins?: readonly string[]
}

export function createS3Gateway(opts: S3GatewayOptions): Gateway {
  let listener: HttpListener | null = null
  let multipart: Multipart | null = null
  return {
    name: 's3',
    get port() {
      return listener?.port ?? 0
    },
    async start(ctx: GatewayContext) {
      // ETags and metadata (gateways/s3/meta/), multipart uploads (gateways/s3/multipart/).
      const meta = new ObjectMeta(ctx.state)
      const mp = createMultipart(ctx, { expiryHours: opts.multipartExpiryHours ?? 24, meta })
      multipart = mp
      const handler = createS3Handler({ login: ctx.login, meta, region: opts.region, baseDomain: opts.baseDomain, log: ctx.log, multipart: (r) => mp.route(r), corsOrigins: opts.corsOrigins ?? [], meter: ctx.meter('s3') })
      // Bodies stream: PutObject has no size limit of its own (S3's is 5 GiB; this server streams any size).
      // What the engine refuses itself is answered in S3's shape too (with x-amz-request-id).
      // Header bytes exactly as signed, and `100 Continue` only after authentication (core/gateway.ts, exactHeaders).
      // The request log shows the route, never a bucket or key (docs/security.md).
      listener = await ctx.listenHttp({ host: opts.host, port: opts.port, handler, maxBodyBytes: null, errorReply: (err, req) => errorReply(req, err, ctx.log), exactHeaders: true, routeOf: s3Route })
      ctx.log('info', 's3 gateway listening', { address: `${opts.host}:${listener.port}`, region: opts.region, base_domain: opts.baseDomain })
    },
    async stop(graceMs?: number) {
      await listener?.close(graceMs ?? opts.graceMs ?? 5000)
      listener = null
      multipart?.stop()
      multipart = null
    },
  }
}
