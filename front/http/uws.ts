/**
 * @module front/http/uws
 * The ONLY file that imports uWebSockets.js (and the only Node-version-bound part:
 * the uWS build). It adapts uWS's callback API to the neutral types of core/http.ts:
 * - request bodies: `res.onData` chunks are copied (uWS reuses its buffer) into a
 *   bounded queue read as an async iterable; the socket is paused while the queue is
 *   full (`res.pause()`/`res.resume()`);
 * - streamed replies: `tryEnd` with a known length or `write` when chunked, waiting on
 *   `onWritable` whenever uWS reports backpressure; the next chunk is pulled only then;
 * - every write outside the handler's synchronous part is corked;
 * - `onAborted` aborts the request's signal and stops the reply's stream;
 * - an error in a streamed body after the first byte closes the connection, so the
 *   client sees a failed transfer and never a truncated "success".
 */
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import type * as UWS from 'uWebSockets.js'
import { ApiError } from '../../core/api-error.js'
import { FsError } from '../../core/errors.js'
import type { HttpHandler, HttpReply, HttpRequest } from '../../core/http.js'
import { errorReply, statusLine } from './status.js'

const require = createRequire(import.meta.url)

export interface UwsInfo {
  /** True when the native binary loaded; false on the package's JS emulation. */
  readonly native: boolean
  readonly version: string
}

let loaded: { uws: typeof UWS; info: UwsInfo } | null = null

/** Loads uWebSockets.js once and tells which build it is. */
export function loadUws(): { uws: typeof UWS; info: UwsInfo } {
  if (loaded) return loaded
  const uws = require('uWebSockets.js') as typeof UWS
  const pkg = require('uWebSockets.js/package.json') as { name: string; version: string }
  // The package silently falls back to a slow JS emulation when no binary fits this
  // platform; only the native App is a native function.
  const native = String(uws.App).includes('[native code]')
  loaded = { uws, info: { native, version: `${pkg.name}@${pkg.version}` } }
  return loaded
}

export interface RequestLog {
  readonly requestId: string
  readonly method: string
  readonly path: string
  readonly status: number
  readonly bytes: number
  readonly ms: number
  readonly remote: string
  readonly error?: string
}

export interface ServerOptions {
  readonly handler: HttpHandler
  /** Largest request body; larger ones fail with EFBIG (413). */
  readonly maxBodyBytes: number | null
  readonly onRequestDone: (log: RequestLog) => void
}

export interface HttpServer {
  readonly port: number
  /** Requests being answered. */
  readonly inFlight: number
  /** Stops accepting connections; requests still arriving on open ones get 503. */
  stopListening(): void
  /** Resolves when no request is in flight, or after `ms`. */
  drain(ms: number): Promise<void>
  /** Closes every connection. */
  close(): void
}

/** Body bytes buffered before the socket is paused, and the level at which it resumes. */
const BODY_HIGH = 4 * 1024 * 1024
const BODY_LOW = 1024 * 1024
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/
/**
 * Generated request ids: a random prefix per process and a counter. Unique, and cheap:
 * drawing random bytes per request cost a third of the main thread under load.
 */
const ID_PREFIX = randomBytes(6).toString('base64url')
let idCounter = 0
const nextRequestId = () => `${ID_PREFIX}${(++idCounter).toString(36)}`

export async function listen(host: string, port: number, opts: ServerOptions): Promise<HttpServer> {
  const { uws } = loadUws()
  const app = uws.App()
  let inFlight = 0
  let draining = false
  let idle: (() => void) | null = null

  app.any('/*', (res, req) => {
    inFlight++
    const exchange = new Exchange(res, req, opts)
    if (draining) exchange.refuse()
    else exchange.run()
    void exchange.done.then(() => {
      inFlight--
      if (inFlight === 0) idle?.()
    })
  })

  const socket = await new Promise<UWS.us_listen_socket>((resolve, reject) => {
    app.listen(host, port, (s) => (s ? resolve(s) : reject(new Error(`cannot listen on ${host}:${port} (in use, or not an address of this machine)`))))
  })
  let listening = true
  return {
    port: uws.us_socket_local_port(socket),
    get inFlight() {
      return inFlight
    },
    stopListening() {
      draining = true
      if (listening) uws.us_listen_socket_close(socket)
      listening = false
    },
    async drain(ms) {
      if (inFlight === 0) return
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, ms)
        idle = () => {
          clearTimeout(t)
          resolve()
        }
      })
    },
    close() {
      draining = true
      listening = false
      // Present in the native build, missing from its type declarations: closes every socket.
      ;(app as unknown as { close(): void }).close()
    },
  }
}

/** One request and its reply. */
class Exchange implements HttpRequest {
  readonly method: string
  readonly path: string
  readonly query: URLSearchParams
  readonly remoteAddress: string
  readonly requestId: string
  readonly contentLength: number | null
  readonly #headers = new Map<string, string>()
  readonly #res: UWS.HttpResponse
  readonly #opts: ServerOptions
  readonly #abort = new AbortController()
  readonly #started = performance.now()
  #status = 0
  #bytes = 0
  /** The response is complete or the client is gone: `res` must not be touched. */
  #finished = false
  #logged = false
  #error: string | undefined
  #settle!: () => void
  readonly done = new Promise<void>((r) => (this.#settle = r))
  // Request body queue.
  readonly #chunks: Buffer[] = []
  #queued = 0
  #received = 0
  #bodyEnded = false
  #bodyError: FsError | null = null
  #paused = false
  #wake: (() => void) | null = null
  #writable: { retry: (offset: number) => boolean; settle: (alive: boolean) => void } | null = null
  #writableHooked = false

  constructor(res: UWS.HttpResponse, req: UWS.HttpRequest, opts: ServerOptions) {
    // Everything is read from `req` now: it is only valid during this callback.
    this.#res = res
    this.#opts = opts
    this.method = req.getCaseSensitiveMethod().toUpperCase()
    this.path = req.getUrl()
    this.query = new URLSearchParams(req.getQuery() ?? '')
    req.forEach((k, v) => this.#headers.set(k, v))
    const sent = this.#headers.get('x-request-id')
    this.requestId = sent && REQUEST_ID.test(sent) ? sent : nextRequestId()
    this.remoteAddress = Buffer.from(res.getRemoteAddressAsText()).toString()
    const cl = this.#headers.get('content-length')
    this.contentLength = cl !== undefined && /^\d+$/.test(cl) ? Number(cl) : null
    res.onAborted(() => this.#onAborted())
    if (this.method !== 'GET' && this.method !== 'HEAD') res.onData((ab, last) => this.#onData(ab, last))
    else this.#bodyEnded = true
  }

  get signal(): AbortSignal {
    return this.#abort.signal
  }

  header(name: string): string | undefined {
    return this.#headers.get(name)
  }

  get body(): AsyncIterable<Uint8Array> {
    return { [Symbol.asyncIterator]: () => this.#readBody() }
  }

  run(): void {
    const max = this.#opts.maxBodyBytes
    if (max !== null && this.contentLength !== null && this.contentLength > max) {
      this.#bodyError = tooLarge(max)
    }
    this.#opts
      .handler(this)
      .catch((err: unknown) => errorReply(err).reply)
      .then((reply) => this.#send(reply))
      .catch(() => {})
  }

  /** Shutting down: 503 and close the connection. */
  refuse(): void {
    const { reply } = errorReply(new ApiError('UNAVAILABLE', 'the server is shutting down'))
    void this.#send({ ...reply, headers: { ...reply.headers, connection: 'close' } })
  }

  // Request body ------------------------------------------------------------

  #onData(ab: ArrayBuffer, last: boolean): void {
    if (this.#finished) return
    this.#received += ab.byteLength
    const max = this.#opts.maxBodyBytes
    if (max !== null && this.#received > max && !this.#bodyError) this.#bodyError = tooLarge(max)
    // A refused body (too large) is dropped as it arrives, not buffered.
    if (ab.byteLength > 0 && !this.#bodyError) {
      // uWS reuses `ab` after this callback returns: copy it into a buffer of its own.
      const copy = Buffer.allocUnsafeSlow(ab.byteLength)
      copy.set(new Uint8Array(ab))
      this.#chunks.push(copy)
      this.#queued += copy.byteLength
      if (this.#queued >= BODY_HIGH && !this.#paused) {
        this.#paused = true
        this.#res.pause()
      }
    }
    if (last) this.#bodyEnded = true
    this.#wakeBody()
  }

  async *#readBody(): AsyncGenerator<Uint8Array, void, undefined> {
    for (;;) {
      if (this.#bodyError) throw this.#bodyError
      if (this.#chunks.length > 0) {
        yield this.#take()
        continue
      }
      if (this.#bodyEnded) return
      if (this.#abort.signal.aborted) throw new FsError('ECANCELED', 'the client went away')
      await new Promise<void>((r) => (this.#wake = r))
    }
  }

  /** Everything queued, as one chunk that owns its whole buffer. */
  #take(): Uint8Array {
    const out = this.#chunks.length === 1 ? this.#chunks[0]! : concatOwned(this.#chunks, this.#queued)
    this.#chunks.length = 0
    this.#queued = 0
    if (this.#paused && !this.#finished) {
      this.#paused = false
      this.#res.resume()
    }
    return out
  }

  #wakeBody(): void {
    const w = this.#wake
    this.#wake = null
    w?.()
  }

  // Reply -------------------------------------------------------------------

  async #send(reply: HttpReply): Promise<void> {
    if (this.#finished) return this.#end(reply, new FsError('ECANCELED', 'the client went away'))
    this.#status = reply.status
    const body = reply.body
    try {
      if (body === undefined) {
        this.#corked(() => {
          this.#writeHead(reply)
          if (reply.length !== undefined) this.#res.endWithoutBody(reply.length, this.#unreadBody)
          // 304, or HEAD of a body whose length is unknown (a transformed download):
          // announce no length at all; `end()` would claim Content-Length: 0.
          else if (reply.status === 304 || this.method === 'HEAD') this.#res.endWithoutBody()
          else this.#res.end(undefined, this.#unreadBody)
        })
      } else if (typeof body === 'string' || body instanceof Uint8Array) {
        const bytes = typeof body === 'string' ? Buffer.from(body) : body
        this.#bytes = bytes.byteLength
        this.#corked(() => this.#writeHead(reply).end(bytes, this.#unreadBody))
      } else {
        await this.#stream(reply, body)
      }
      this.#end(reply)
    } catch (err) {
      // After the head is out the only honest signal left is a broken connection.
      if (!this.#finished) this.#res.close()
      this.#end(reply, err)
    }
  }

  async #stream(reply: HttpReply, body: AsyncIterable<Uint8Array>): Promise<void> {
    const total = reply.length
    this.#corked(() => this.#writeHead(reply))
    for await (const chunk of body) {
      if (this.#finished) throw new FsError('ECANCELED', 'the client went away')
      if (total === undefined) await this.#write(chunk)
      else await this.#tryEnd(chunk, total)
      this.#bytes += chunk.byteLength
    }
    if (this.#finished) {
      if (total !== undefined && this.#bytes === total) return // the last tryEnd completed it
      throw new FsError('ECANCELED', 'the client went away')
    }
    if (total === undefined) this.#corked(() => this.#res.end())
    else if (this.#bytes !== total) throw new FsError('EIO', `body had ${this.#bytes} bytes, ${total} were announced`)
  }

  /** Chunked: uWS keeps what it could not send; wait for it to drain before the next. */
  async #write(chunk: Uint8Array): Promise<void> {
    let ok = false
    this.#corked(() => (ok = this.#res.write(chunk)))
    if (!ok) await this.#whenWritable(() => true)
  }

  /** Known length: uWS sends what it can; the rest is retried from onWritable's offset. */
  async #tryEnd(chunk: Uint8Array, total: number): Promise<void> {
    const start = this.#res.getWriteOffset()
    let ok = false
    let done = false
    this.#corked(() => ([ok, done] = this.#res.tryEnd(chunk, total)))
    if (done) this.#finished = true
    if (ok || done) return
    await this.#whenWritable((offset) => {
      const [ok2, done2] = this.#res.tryEnd(chunk.subarray(offset - start), total)
      if (done2) this.#finished = true
      return ok2 || done2
    })
  }

  /**
   * Waits until uWS can take more. `retry(offset)` re-sends what is left and says whether
   * it all went. One onWritable handler is registered per response and dispatches to the
   * current retry: registering a new handler per wait is unreliable, since the next wait
   * can begin (in a promise continuation) while uWS is still inside the previous handler.
   */
  #whenWritable(retry: (offset: number) => boolean): Promise<void> {
    if (!this.#writableHooked) {
      this.#writableHooked = true
      this.#res.onWritable((offset) => {
        const w = this.#writable
        if (!w) return true
        const ok = w.retry(offset)
        if (ok) {
          this.#writable = null
          w.settle(true)
        }
        return ok
      })
    }
    return new Promise<void>((resolve, reject) => {
      this.#writable = { retry, settle: (alive) => (alive ? resolve() : reject(new FsError('ECANCELED', 'the client went away'))) }
    })
  }

  /**
   * The reply goes out before the request body was read (an upload refused early): the
   * connection is closed after it, as HTTP/1.1 requires when the rest of a body is left.
   */
  get #unreadBody(): boolean {
    return !this.#bodyEnded
  }

  #writeHead(reply: HttpReply): UWS.HttpResponse {
    const res = this.#res.writeStatus(statusLine(reply.status))
    res.writeHeader('x-request-id', this.requestId)
    for (const [k, v] of Object.entries(reply.headers ?? {})) res.writeHeader(k, v)
    return res
  }

  #corked(fn: () => void): void {
    if (!this.#finished) this.#res.cork(fn)
  }

  #onAborted(): void {
    this.#finished = true
    this.#abort.abort(new FsError('ECANCELED', 'the client went away'))
    this.#wakeBody()
    const w = this.#writable
    this.#writable = null
    w?.settle(false)
  }

  #end(reply: HttpReply, err?: unknown): void {
    if (this.#logged) return
    this.#logged = true
    this.#finished = true
    if (err !== undefined) this.#error = err instanceof Error ? `${err.name}: ${err.message}` : String(err)
    try {
      reply.finally?.(err)
    } finally {
      const log: RequestLog = {
        requestId: this.requestId,
        method: this.method,
        path: this.path,
        status: this.#status,
        bytes: this.#bytes,
        ms: Math.round((performance.now() - this.#started) * 10) / 10,
        remote: this.remoteAddress,
        ...(this.#error === undefined ? {} : { error: this.#error }),
      }
      this.#opts.onRequestDone(log)
      this.#settle()
    }
  }
}

function tooLarge(max: number): FsError {
  return new FsError('EFBIG', `the request body is over the limit of ${max} bytes`)
}

function concatOwned(chunks: readonly Buffer[], total: number): Buffer {
  const out = Buffer.allocUnsafeSlow(total)
  let off = 0
  for (const c of chunks) {
    out.set(c, off)
    off += c.byteLength
  }
  return out
}
