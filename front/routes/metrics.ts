/**
 * @module front/routes/metrics
 * GET /metrics: the Prometheus exposition (front/metrics.ts). Off the public API:
 * answered to loopback clients (`metrics.allow_loopback`, on by default) and to
 * anyone with the configured bearer token (`metrics.token`), compared in constant
 * time. A request that carries a proxy's forwarding header is not a loopback client:
 * a reverse proxy on the same machine would otherwise open the metrics to everyone.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { BlockList, isIP } from 'node:net'
import { ApiError } from '../../core/api-error.js'
import type { Config } from '../../core/config.js'
import type { HttpReply, HttpRequest } from '../../core/http.js'
import type { Metrics } from '../metrics.js'

const LOOPBACK = new BlockList()
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4') // also matches IPv4-mapped IPv6 (::ffff:127.0.0.1)
LOOPBACK.addAddress('::1', 'ipv6')

export function isLoopback(address: string): boolean {
  const a = address.replace(/^\[|\]$/g, '')
  const family = isIP(a)
  return family !== 0 && LOOPBACK.check(a, family === 4 ? 'ipv4' : 'ipv6')
}

const digest = (s: string) => createHash('sha256').update(s).digest()

export function metricsRoute(metrics: Metrics, settings: Config['metrics']): (req: HttpRequest) => Promise<HttpReply> {
  const token = settings.token === null ? null : digest(settings.token)
  const proxied = (req: HttpRequest) => req.header('forwarded') !== undefined || req.header('x-forwarded-for') !== undefined
  return async (req) => {
    const auth = req.header('authorization')
    const bearer = auth?.match(/^Bearer +(\S+)$/i)?.[1]
    const tokenOk = token !== null && bearer !== undefined && timingSafeEqual(digest(bearer), token)
    const local = settings.allow_loopback && isLoopback(req.remoteAddress) && !proxied(req)
    if (!tokenOk && !local) {
      if (token !== null) throw new ApiError('NOT_AUTHENTICATED', 'the metrics need the bearer token set in metrics.token')
      throw new ApiError('FORBIDDEN', 'the metrics are served to loopback clients only (metrics.allow_loopback), or with a bearer token set in metrics.token')
    }
    return { status: 200, headers: { 'content-type': metrics.contentType, 'cache-control': 'no-store' }, body: await metrics.text() }
  }
}
