/**
 * @module front/metrics
 * The service's Prometheus metrics (prom-client), one registry per server. Requests
 * are counted in one place: front/server.ts passes every request through
 * `Metrics.observe`, and its authentication names the request's backend with
 * `Metrics.noteBackend`. Pool and session figures are read when scraped.
 *
 * Labels stay bounded: a route is its pattern (`/api/share/{id}`, never an id or a
 * raw path), unknown methods are `other`, a backend is its type.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { HttpReply, HttpRequest } from '../core/http.js'
import type { PoolStats } from '../workers/pool.js'

export interface MetricSources {
  readonly pool: () => PoolStats
  readonly sessionsIssued: () => number
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])
/** Request and transfer durations, in seconds: from a quick listing to an hour-long transfer. */
const REQUEST_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
const TRANSFER_BUCKETS = [0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600]

/** Process-wide figures (CPU, memory, event loop): one set per process, shared by every server in it. */
let processRegistry: Registry | null = null

/** What is known about one request while it is answered. */
interface Meter {
  backend: string | null
  bytesIn: number
  /** Counted in `transfersInFlight` (an upload that has begun, a streamed reply). */
  live: Direction | null
}
type Direction = 'in' | 'out'

export class Metrics {
  readonly #registry = new Registry()
  readonly #meters = new WeakMap<HttpRequest, Meter>()
  readonly #requests: Counter<'route' | 'method' | 'status'>
  readonly #requestSeconds: Histogram<'route'>
  readonly #inFlight: Gauge
  readonly #bytes: Counter<'backend' | 'direction'>
  readonly #transferSeconds: Histogram<'backend' | 'direction'>
  readonly #transfers: Gauge<'direction'>
  readonly #loginFailures: Counter<'endpoint'>
  readonly #throttled: Counter<'route'>

  constructor(sources: MetricSources) {
    const registers = [this.#registry]
    this.#requests = new Counter({ name: 'filegate_http_requests_total', help: 'HTTP requests answered, by route pattern, method and status', labelNames: ['route', 'method', 'status'], registers })
    this.#requestSeconds = new Histogram({ name: 'filegate_http_request_duration_seconds', help: 'Time from a request to the end of its reply, by route pattern', labelNames: ['route'], buckets: REQUEST_BUCKETS, registers })
    this.#inFlight = new Gauge({ name: 'filegate_http_requests_in_flight', help: 'Requests being answered', registers })
    this.#bytes = new Counter({ name: 'filegate_transfer_bytes_total', help: 'Body bytes to (in: uploads) and from (out: downloads, zips) a storage, by backend type', labelNames: ['backend', 'direction'], registers })
    this.#transferSeconds = new Histogram({ name: 'filegate_transfer_duration_seconds', help: 'Duration of uploads (in) and streamed downloads (out), by backend type', labelNames: ['backend', 'direction'], buckets: TRANSFER_BUCKETS, registers })
    this.#transfers = new Gauge({ name: 'filegate_transfers_in_flight', help: 'Uploads and streamed downloads in progress', labelNames: ['direction'], registers })
    this.#loginFailures = new Counter({ name: 'filegate_login_failures_total', help: 'Refused logins (401): session (POST /api/session), admin (POST /admin/api/session), share (a share password)', labelNames: ['endpoint'], registers })
    this.#throttled = new Counter({ name: 'filegate_throttled_total', help: 'Requests refused for too many attempts (429), by route pattern', labelNames: ['route'], registers })
    const pool = (name: string, help: string, pick: (s: PoolStats) => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(pick(sources.pool()))
        },
      })
    pool('filegate_pool_threads', 'Worker threads in the pool', (s) => s.threads)
    pool('filegate_pool_tasks', 'Tasks in the pool, running or queued (a transfer is a task until its stream ends)', (s) => s.running)
    pool('filegate_pool_queued_tasks', 'Tasks waiting for a worker thread', (s) => s.queued)
    new Counter({
      name: 'filegate_sessions_issued_total',
      help: 'Session tokens issued since start',
      registers,
      collect() {
        this.reset()
        this.inc(sources.sessionsIssued())
      },
    })
  }

  get contentType(): string {
    return this.#registry.contentType
  }

  /** The exposition text: this server's figures, then the process's. */
  async text(): Promise<string> {
    if (!processRegistry) {
      processRegistry = new Registry()
      collectDefaultMetrics({ register: processRegistry })
    }
    return (await this.#registry.metrics()) + (await processRegistry.metrics())
  }

  /**
   * Answers `req` with `handle`, counting it: the request, its duration, and the body
   * bytes that flow in (read from the request) and out (a streamed reply).
   */
  async observe(req: HttpRequest, route: string, handle: (req: HttpRequest) => Promise<HttpReply>): Promise<HttpReply> {
    const started = performance.now()
    const meter: Meter = { backend: null, bytesIn: 0, live: null }
    const seen = req.method === 'GET' || req.method === 'HEAD' ? req : new CountedRequest(req, (n) => this.#counted(meter, 'in', n))
    this.#meters.set(seen, meter)
    this.#inFlight.inc()
    let reply: HttpReply
    try {
      reply = await handle(seen)
    } catch (err) {
      this.#inFlight.dec()
      throw err
    }
    const body = reply.body
    const streamed = body !== undefined && typeof body !== 'string' && !(body instanceof Uint8Array)
    if (streamed && meter.backend !== null) {
      this.#goLive(meter, 'out')
      reply = { ...reply, body: this.#countOut(body, meter) }
    }
    const first = reply.finally
    return {
      ...reply,
      finally: (err?: unknown) => {
        try {
          first?.(err)
        } finally {
          this.#done(req, route, meter, reply.status, (performance.now() - started) / 1000)
        }
      },
    }
  }

  /** The request was authenticated to a storage of this backend type. */
  noteBackend(req: HttpRequest, type: string): void {
    const meter = this.#meters.get(req)
    if (meter) meter.backend = type
  }

  #counted(meter: Meter, direction: Direction, n: number): void {
    if (meter.backend === null) return // a JSON body (a login), not a transfer
    if (direction === 'in') {
      meter.bytesIn += n
      this.#goLive(meter, 'in')
    }
    this.#bytes.inc({ backend: meter.backend, direction }, n)
  }

  #goLive(meter: Meter, direction: Direction): void {
    if (meter.live !== null) return
    meter.live = direction
    this.#transfers.inc({ direction })
  }

  async *#countOut(body: AsyncIterable<Uint8Array>, meter: Meter): AsyncGenerator<Uint8Array, void, undefined> {
    for await (const chunk of body) {
      this.#counted(meter, 'out', chunk.byteLength)
      yield chunk
    }
  }

  #done(req: HttpRequest, route: string, meter: Meter, status: number, seconds: number): void {
    this.#inFlight.dec()
    this.#requests.inc({ route, method: METHODS.has(req.method) ? req.method : 'other', status: String(status) })
    this.#requestSeconds.observe({ route }, seconds)
    if (meter.live !== null && meter.backend !== null) {
      this.#transfers.dec({ direction: meter.live })
      this.#transferSeconds.observe({ backend: meter.backend, direction: meter.live }, seconds)
    }
    if (status === 429) this.#throttled.inc({ route })
    if (status === 401) {
      const endpoint =
        req.method === 'POST' && route === '/api/session' ? 'session' : req.method === 'POST' && route === '/admin/api/session' ? 'admin' : req.query.has('share') ? 'share' : null
      if (endpoint) this.#loginFailures.inc({ endpoint })
    }
  }
}

/** A request whose body reports each chunk as it is read; everything else is the original's. */
class CountedRequest implements HttpRequest {
  readonly #inner: HttpRequest
  readonly #count: (n: number) => void

  constructor(inner: HttpRequest, count: (n: number) => void) {
    this.#inner = inner
    this.#count = count
  }

  get method() {
    return this.#inner.method
  }
  get path() {
    return this.#inner.path
  }
  get query() {
    return this.#inner.query
  }
  header(name: string) {
    return this.#inner.header(name)
  }
  get remoteAddress() {
    return this.#inner.remoteAddress
  }
  get requestId() {
    return this.#inner.requestId
  }
  get signal() {
    return this.#inner.signal
  }
  get contentLength() {
    return this.#inner.contentLength
  }
  get body(): AsyncIterable<Uint8Array> {
    const inner = this.#inner.body
    const count = this.#count
    return {
      async *[Symbol.asyncIterator]() {
        for await (const chunk of inner) {
          count(chunk.byteLength)
          yield chunk
        }
      },
    }
  }
}
