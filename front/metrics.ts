/**
 * @module front/metrics
 * The service's Prometheus metrics (prom-client), one registry per server. Requests
 * are counted where front/server.ts handles them: every request passes through
 * `Metrics.observe`, and every file request, once authenticated, through
 * `Metrics.transfer` with its storage's type. Pool and session figures are read when
 * scraped.
 *
 * Labels stay bounded: a route is its pattern (`/api/share/{id}`, never an id or a
 * raw path), unknown methods are `other`, a backend is its type.
 *
 * Per-door figures (`filegate_door_*`: the HTTP API, SFTP, S3, MCP) are counted by the
 * connection layer (gateways/connection/metrics.ts); the HTTP API's share is counted
 * here, for the requests that are not a gateway's routes (MCP counts its own calls).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { HttpReply, HttpRequest } from '../core/http.js'
import type { StoreConnections } from '../core/state.js'
import type { PoolStats } from '../workers/pool.js'
import type { DoorMeter } from '../core/doors.js'
import type { DoorMetrics } from '../gateways/connection/index.js'

export interface MetricSources {
  readonly pool: () => PoolStats
  readonly sessionsIssued: () => number
  /** Requests being answered. */
  readonly inFlight: () => number
  /** The state store's connections, when it is a shared one (PostgreSQL). */
  readonly stateConnections?: () => StoreConnections
  /** Every door's counters; absent: none shown, the HTTP API's not counted. */
  readonly doors?: DoorMetrics
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])
/** Transfer durations, in seconds: from a small file to an hour-long transfer. */
const TRANSFER_BUCKETS = [0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600]

/** Process-wide figures (CPU, memory, event loop): one set per process, shared by every server in it. */
let processRegistry: Registry | null = null

type Direction = 'in' | 'out'

export class Metrics {
  readonly #registry = new Registry()
  /**
   * Requests by route, method and status, counted in a plain map and handed to
   * prom-client when scraped: the per-request cost is one map update.
   */
  readonly #answered = new Map<string, { readonly labels: Record<'route' | 'method' | 'status', string>; n: number }>()
  readonly #bytes: Counter<'backend' | 'direction'>
  readonly #transferSeconds: Histogram<'backend' | 'direction'>
  readonly #transfers: Gauge<'direction'>
  readonly #loginFailures: Counter<'endpoint'>
  readonly #throttled: Counter<'route'>
  readonly #http: DoorMeter | null

  constructor(sources: MetricSources) {
    const registers = [this.#registry]
    const answered = this.#answered
    new Counter({
      name: 'filegate_http_requests_total',
      help: 'HTTP requests answered, by route pattern, method and status',
      labelNames: ['route', 'method', 'status'],
      registers,
      collect() {
        this.reset()
        for (const { labels, n } of answered.values()) this.inc(labels, n)
      },
    })
    this.#bytes = new Counter({ name: 'filegate_transfer_bytes_total', help: 'Body bytes to (in: uploads) and from (out: downloads, zips) a storage, by backend type', labelNames: ['backend', 'direction'], registers })
    this.#transferSeconds = new Histogram({ name: 'filegate_transfer_duration_seconds', help: 'Duration of uploads (in) and downloads (out), by backend type', labelNames: ['backend', 'direction'], buckets: TRANSFER_BUCKETS, registers })
    this.#transfers = new Gauge({ name: 'filegate_transfers_in_flight', help: 'Uploads and downloads in progress', labelNames: ['direction'], registers })
    this.#loginFailures = new Counter({ name: 'filegate_login_failures_total', help: 'Refused logins (401): session (POST /api/session), admin (POST /admin/api/session), share (a share link password or API key)', labelNames: ['endpoint'], registers })
    this.#throttled = new Counter({ name: 'filegate_throttled_total', help: 'Requests refused for too many attempts (429), by route pattern', labelNames: ['route'], registers })
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read())
        },
      })
    gauge('filegate_http_requests_in_flight', 'Requests being answered', sources.inFlight)
    gauge('filegate_pool_threads', 'Worker threads in the pool', () => sources.pool().threads)
    gauge('filegate_pool_tasks', 'Short tasks running on the worker threads (live transfers are counted apart)', () => sources.pool().running)
    gauge('filegate_pool_queued_tasks', 'Tasks waiting for a worker thread', () => sources.pool().queued)
    gauge('filegate_pool_transfers', 'Live transfers owned by the worker threads', () => sources.pool().transfers)
    gauge('filegate_pool_buffered_bytes', 'Bytes buffered for transfers, against transfer_buffer_bytes', () => sources.pool().bufferedBytes)
    const state = sources.stateConnections
    if (state) {
      gauge('filegate_state_connections', 'Connections open to the state store (PostgreSQL), against state_pool_size', () => state().open)
      gauge('filegate_state_connections_idle', 'Of them, idle', () => state().idle)
      gauge('filegate_state_waiting_queries', 'Queries waiting for a state store connection', () => state().waiting)
    }
    const doors = sources.doors
    this.#http = doors?.meter('http') ?? null
    if (doors) {
      new Counter({
        name: 'filegate_door_requests_total',
        help: 'Requests handled, by door: http (an API request), sftp (a request packet), s3 (an HTTP request), mcp (a JSON-RPC call)',
        labelNames: ['door'],
        registers,
        collect() {
          this.reset()
          for (const f of doors.figures()) this.inc({ door: f.door }, f.requests)
        },
      })
      new Counter({
        name: 'filegate_door_errors_total',
        help: "Requests that failed, by door and the door's error class (HTTP: 4xx/5xx, SFTP: status, S3: error code, MCP: JSON-RPC error or tool_error)",
        labelNames: ['door', 'error'],
        registers,
        collect() {
          this.reset()
          for (const f of doors.figures()) for (const [error, n] of f.errors) this.inc({ door: f.door, error }, n)
        },
      })
      new Counter({
        name: 'filegate_door_bytes_total',
        help: 'File bytes through each door: in (written to a storage), out (read from one)',
        labelNames: ['door', 'direction'],
        registers,
        collect() {
          this.reset()
          for (const f of doors.figures()) {
            this.inc({ door: f.door, direction: 'in' }, f.bytesIn)
            this.inc({ door: f.door, direction: 'out' }, f.bytesOut)
          }
        },
      })
      new Gauge({
        name: 'filegate_door_sessions',
        help: 'Sessions open, by door: SFTP channels, MCP sessions; http and s3 (no sessions of their own): requests being answered',
        labelNames: ['door'],
        registers,
        collect() {
          for (const f of doors.figures()) this.set({ door: f.door }, f.sessions)
        },
      })
    }
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
   * Answers `req` with `handle` and counts the answer under `route` (a pattern); a
   * request of the API itself (not `gateway`'s: a gateway counts its own) also as the
   * `http` door's.
   */
  async observe(req: HttpRequest, route: string, handle: (req: HttpRequest) => Promise<HttpReply>, gateway = false): Promise<HttpReply> {
    const door = gateway ? null : this.#http
    const ended = door?.session()
    let reply: HttpReply
    try {
      reply = await handle(req)
    } catch (err) {
      ended?.()
      door?.request('5xx')
      throw err
    }
    if (door) {
      door.request(reply.status >= 500 ? '5xx' : reply.status >= 400 ? '4xx' : undefined)
      const first = reply.finally
      reply = {
        ...reply,
        finally: (err?: unknown) => {
          try {
            first?.(err)
          } finally {
            ended!()
          }
        },
      }
    }
    const method = METHODS.has(req.method) ? req.method : 'other'
    const key = `${route} ${method} ${reply.status}`
    const seen = this.#answered.get(key)
    if (seen) seen.n++
    else this.#answered.set(key, { labels: { route, method, status: String(reply.status) }, n: 1 })
    if (reply.status === 429) this.#throttled.inc({ route })
    if (reply.status === 401) {
      const login = req.method === 'POST' && (route === '/api/session' || route === '/admin/api/session')
      const endpoint = login ? (route === '/api/session' ? 'session' : 'admin') : req.query.has('share') ? 'share' : null
      if (endpoint) this.#loginFailures.inc({ endpoint })
    }
    return reply
  }

  /** `req`, its body counted as file bytes in through the HTTP door (a tus upload's). */
  fileBody(req: HttpRequest): HttpRequest {
    const door = this.#http
    if (door === null || req.method === 'GET' || req.method === 'HEAD') return req
    return new CountedRequest(req, (n) => door.bytes('in', n))
  }

  /**
   * A file request on a storage of type `backend`: the body bytes that flow in (read
   * from the request) and out (a streamed reply), and, for an upload or a download,
   * its duration and its presence while it runs.
   */
  async transfer(backend: string, req: HttpRequest, handle: (req: HttpRequest) => Promise<HttpReply>): Promise<HttpReply> {
    const started = performance.now()
    let live: Direction | null = null
    const goLive = (direction: Direction) => {
      if (live !== null) return
      live = direction
      this.#transfers.inc({ direction })
    }
    const end = () => {
      if (live === null) return
      this.#transfers.dec({ direction: live })
      this.#transferSeconds.observe({ backend, direction: live }, (performance.now() - started) / 1000)
      live = null
    }
    const counted =
      req.method === 'GET' || req.method === 'HEAD'
        ? req
        : new CountedRequest(req, (n) => {
            goLive('in')
            this.#bytes.inc({ backend, direction: 'in' }, n)
            this.#http?.bytes('in', n)
          })
    let reply: HttpReply
    try {
      reply = await handle(counted)
    } catch (err) {
      end()
      throw err
    }
    const body = reply.body
    if (body === undefined || typeof body === 'string' || body instanceof Uint8Array) {
      end() // nothing streams out: an upload is over once its answer is ready
      return reply
    }
    goLive('out')
    const first = reply.finally
    return {
      ...reply,
      body: countOut(body, (n) => {
        this.#bytes.inc({ backend, direction: 'out' }, n)
        this.#http?.bytes('out', n)
      }),
      finally: (err?: unknown) => {
        try {
          first?.(err)
        } finally {
          end()
        }
      },
    }
  }
}

async function* countOut(body: AsyncIterable<Uint8Array>, count: (n: number) => void): AsyncGenerator<Uint8Array, void, undefined> {
  for await (const chunk of body) {
    count(chunk.byteLength)
    yield chunk
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
  headers() {
    return this.#inner.headers()
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
