/**
 * @module gateways/s3/handler
 * The S3 endpoint's HTTP handler: who is asking (authentication), which bucket and
 * key (path-style `/<bucket>/<key>`, or virtual-hosted `<bucket>.<base domain>`),
 * which operation (method + sub-resource), and every answer's `x-amz-request-id` and
 * `x-amz-id-2`. Every failure, authentication's included, is S3's XML error document,
 * rendered here and only here; what is neither an S3 error nor a storage error is
 * logged and answered InternalError.
 */
import { randomBytes } from 'node:crypto'
import type { DoorMeter } from '../../core/doors.js'
import type { GatewayLogin } from '../../core/gateway.js'
import type { HttpHandler, HttpReply, HttpRequest } from '../../core/http.js'
import { bucketLocation, bucketVersioning, createBucket, deleteBucket, headBucket, listBuckets } from './buckets.js'
import { type S3Caller, authenticate } from './auth/index.js'
import { copyObject } from './copy.js'
import { corsHeaders, listedOrigins, preflight } from './cors.js'
import { deleteObjects } from './deletes.js'
import { S3Error, notImplemented, toS3Error } from './errors.js'
import { decodePathPart } from './keys.js'
import { listObjectsV1, listObjectsV2 } from './list.js'
import type { ObjectMetaStore } from './meta/index.js'
import { deleteObject, getObject, putObject } from './objects.js'
import type { S3Request } from './request.js'
import { xmlDocument } from './xml.js'
import { changesNothing } from '../../core/permissions.js'

/** Multipart requests (`?uploads`, `?uploadId=`), served by gateways/s3/multipart/; undefined: not one. */
export type MultipartRoute = (r: S3Request) => Promise<HttpReply | undefined>

export interface S3HandlerOptions {
  readonly login: GatewayLogin
  readonly meta: ObjectMetaStore
  readonly region: string
  /** Virtual-hosted style: `<bucket>.<baseDomain>` in the Host header names the bucket. null: path-style only. */
  readonly baseDomain: string | null
  readonly multipart?: MultipartRoute
  /** Browser origins allowed (the service's `cors.origins`): their preflights are answered, their requests get CORS headers. */
  readonly corsOrigins?: readonly string[]
  readonly log: (level: 'debug' | 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void
  /** The door's counters: a request is an HTTP request, an error its S3 error code, a session a request being answered. */
  readonly meter?: DoorMeter
}

/** This node, as `x-amz-id-2` tells it (S3 sends its host id there). */
const HOST_ID = randomBytes(24).toString('base64')
/** What every answer carries. */
const ids = (req: HttpRequest) => ({ 'x-amz-request-id': req.requestId, 'x-amz-id-2': HOST_ID })

/** Sub-resources of S3 this server does not have: 501 rather than acting as if the plain request was meant. */
const UNSUPPORTED = [
  'acl', 'policy', 'policyStatus', 'cors', 'lifecycle', 'tagging', 'website', 'logging', 'notification', 'replication',
  'encryption', 'object-lock', 'retention', 'legal-hold', 'torrent', 'attributes', 'restore', 'select', 'versions',
  'accelerate', 'analytics', 'inventory', 'metrics', 'ownershipControls', 'publicAccessBlock', 'requestPayment',
  'intelligent-tiering', 'session', 'renameObject',
]

const isMultipart = (q: URLSearchParams): boolean => q.has('uploads') || q.has('uploadId')

/** Canned ACLs that say what is true here anyway: only the key's user has access. */
const TRUE_ACLS = new Set(['private', 'bucket-owner-full-control'])

/**
 * Request headers that ask for something this server would not keep (an ACL granting
 * others, encryption at rest, object lock, tags): refused with NotImplemented rather
 * than stored without it, so a client never believes an object is public, encrypted or
 * locked when it is not. Storage classes are taken as STANDARD (they change no promise).
 */
function refuseUnkept(req: HttpRequest): void {
  const acl = req.header('x-amz-acl')
  if (acl !== undefined && !TRUE_ACLS.has(acl.trim())) throw notImplemented(`The canned ACL "${acl}"`)
  for (const [name] of req.headers()) {
    if (name.startsWith('x-amz-grant-')) throw notImplemented('ACL grants')
    if (name.startsWith('x-amz-server-side-encryption')) throw notImplemented('Server-side encryption')
    if (name.startsWith('x-amz-object-lock-')) throw notImplemented('Object lock')
    if (name === 'x-amz-tagging') throw notImplemented('Object tagging')
    if (name === 'x-amz-website-redirect-location') throw notImplemented('Website redirects')
  }
}

/** Bucket and key of a request: from the Host (virtual-hosted) or the path's first segment. */
export function address(req: HttpRequest, baseDomain: string | null): { bucket: string; key: string } {
  const path = req.path.startsWith('/') ? req.path.slice(1) : req.path
  if (baseDomain !== null) {
    const host = (req.header('host') ?? '').toLowerCase().replace(/:\d+$/, '')
    if (host.endsWith(`.${baseDomain}`)) return { bucket: host.slice(0, -baseDomain.length - 1), key: decodePathPart(path) }
  }
  const i = path.indexOf('/')
  if (i < 0) return { bucket: decodePathPart(path), key: '' }
  return { bucket: decodePathPart(path.slice(0, i)), key: decodePathPart(path.slice(i + 1)) }
}

async function route(r: S3Request, multipart: MultipartRoute | undefined): Promise<HttpReply> {
  const { req } = r
  const q = req.query
  const m = req.method
  const writes = m === 'PUT' || m === 'POST' || m === 'DELETE'
  // A key that may change nothing is refused every write here; the view refuses the rest, bit by bit (EACCES → AccessDenied).
  if (writes && changesNothing(r.caller.fs.permissions)) throw new S3Error('AccessDenied', 'Access Denied: this key is read-only.', 403)
  if (m === 'PUT' || m === 'POST') refuseUnkept(req)
  const sub = UNSUPPORTED.find((s) => q.has(s))
  if (sub !== undefined) throw notImplemented(`The "${sub}" sub-resource`)
  if (r.bucket === '') {
    if (m === 'GET') return listBuckets(r)
    throw methodNotAllowed(m, 'the service')
  }
  if (isMultipart(q)) {
    const reply = multipart ? await multipart(r) : undefined
    if (reply) return reply
    throw notImplemented('Multipart upload')
  }
  if (r.key === '') {
    switch (m) {
      case 'GET':
        if (q.has('location')) return bucketLocation(r)
        if (q.has('versioning')) return bucketVersioning(r)
        return q.get('list-type') === '2' ? listObjectsV2(r) : listObjectsV1(r)
      case 'HEAD':
        return headBucket(r)
      case 'PUT':
        if (q.has('versioning')) throw notImplemented('Versioning')
        return createBucket(r)
      case 'DELETE':
        return deleteBucket(r)
      case 'POST':
        if (q.has('delete')) return deleteObjects(r)
    }
    throw methodNotAllowed(m, 'a bucket')
  }
  switch (m) {
    case 'GET':
    case 'HEAD':
      if (q.has('partNumber')) throw notImplemented('GetObject by part number')
      // HeadObject tells what GetObject would (size, ETag, metadata): both need can_read, as in S3 (s3:GetObject).
      if (!r.caller.fs.permissions.can_read) throw new S3Error('AccessDenied', 'Access Denied: this key may not read objects.', 403)
      return getObject(r, m === 'HEAD')
    case 'PUT': {
      if (q.has('partNumber')) throw notImplemented('Multipart upload')
      const source = req.header('x-amz-copy-source')
      return source === undefined ? putObject(r) : copyObject(r, source)
    }
    case 'DELETE':
      return deleteObject(r)
  }
  throw methodNotAllowed(m, 'an object')
}

const methodNotAllowed = (method: string, what: string): S3Error =>
  new S3Error('MethodNotAllowed', `The specified method is not allowed against this resource (${what}).`, 405, { Method: method, ResourceType: what.replace(/^an? |^the /, '').toUpperCase() })

export function createS3Handler(opts: S3HandlerOptions): HttpHandler {
  const origins = opts.corsOrigins ?? []
  const allowed = listedOrigins(origins)
  return async (req) => {
    const cors = corsHeaders(req, allowed)
    // A preflight carries no signature: answered before authentication, never a login.
    if (req.method === 'OPTIONS') {
      let reply: HttpReply
      try {
        reply = preflight(req, allowed, origins.length > 0)
      } catch (err) {
        reply = errorReply(req, err, opts.log)
      }
      return { ...reply, headers: { ...reply.headers, ...ids(req) } }
    }
    let caller: S3Caller | null = null
    let reply: HttpReply
    const { meter } = opts
    const ended = meter?.session()
    try {
      caller = await authenticate(req, opts.login, { region: opts.region })
      if (meter) caller = { ...caller, fs: meter.fs(caller.fs) }
      const { bucket, key } = address(req, opts.baseDomain)
      const r: S3Request = { req, caller, ctx: { requestId: req.requestId, signal: req.signal, client: { address: req.remoteAddress, credential: `s3:${caller.accessKeyId}` } }, meta: opts.meta, region: opts.region, bucket, key }
      reply = await route(r, opts.multipart)
      meter?.request()
    } catch (err) {
      meter?.request(toS3Error(err).error.code)
      reply = errorReply(req, err, opts.log)
    }
    const fs = caller?.fs
    const done = reply.finally
    return {
      ...reply,
      headers: { ...reply.headers, ...cors, ...ids(req) },
      finally: (err) => {
        try {
          done?.(err)
        } finally {
          fs?.close()
          ended?.()
        }
      },
    }
  }
}

/**
 * What the request log shows for a path: its shape, never a bucket or key (they are
 * the user's names; docs/security.md, "Logging"). With virtual-hosted style the
 * bucket is in the Host, so the shape names one segment less than it holds.
 */
export function s3Route(path: string): string {
  const rest = path.replace(/^\/+/, '')
  if (rest === '') return '/'
  const i = rest.indexOf('/')
  return i < 0 || i === rest.length - 1 ? '/{bucket}' : '/{bucket}/{key}'
}

/** S3's error document (no body on HEAD, as S3), for the handler's errors and the engine's own refusals. */
export function errorReply(req: HttpRequest, err: unknown, log: S3HandlerOptions['log']): HttpReply {
  const { error, bug } = toS3Error(err)
  if (bug) log('error', 's3 request failed', { request_id: req.requestId, method: req.method, error: err instanceof Error ? (err.stack ?? err.message) : String(err) })
  const headers: Record<string, string> = { 'content-type': 'application/xml', ...ids(req) }
  if (error.status === 503) headers['retry-after'] = '5'
  if (req.method === 'HEAD') return { status: error.status, headers }
  const body = xmlDocument('Error', { Code: error.code, Message: error.message, ...error.extra, Resource: req.path, RequestId: req.requestId }, null)
  return { status: error.status, headers, body }
}
