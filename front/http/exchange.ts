/**
 * @module front/http/exchange
 * What the two HTTP engines (uws.ts, node.ts) share, so that they behave alike:
 * - the request head: header collection, the checks that refuse request-smuggling
 *   primitives and unknown methods before any handler sees the request, the request
 *   id and the announced body length;
 * - the reply: one send path for whole and streamed bodies (HEAD never carries a
 *   body; an empty body always ends the response; a streamed body must match its
 *   announced length; an error before the first byte becomes an error reply, after
 *   it a broken connection), written through a few engine primitives;
 * - the request log line, and the server's interface to the composition root.
 */
import { randomBytes } from 'node:crypto'
import { ApiError } from '../../core/api-error.js'
import { FsError } from '../../core/errors.js'
import type { HttpHandler, HttpReply, HttpRequest } from '../../core/http.js'
import { clientAddress } from './client-address.js'
import { errorReply } from './status.js'

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
  /** How errors the server answers itself are rendered (a gateway's protocol); default: the API's JSON envelope. */
  readonly errorReply?: (err: unknown, req: HttpRequest) => HttpReply
  readonly onRequestDone: (log: RequestLog) => void
  /** Reverse proxies whose X-Forwarded-For names the client (front/http/client-address.ts). */
  readonly trustProxy?: ReadonlySet<string>
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

/** Largest request head (request line and headers) both engines accept; over it: 431. */
export const MAX_HEADER_BYTES = 16 * 1024
/** Most request headers both engines accept (uWS's compiled-in count); over it: 431. */
export const MAX_HEADERS = 100

/** Methods filegate serves somewhere; any other is 501 before routing. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])
/**
 * Headers that must come once: a second copy is how requests are smuggled past a
 * proxy (Content-Length) or credentials confused (Authorization). Content-Length may
 * repeat with the same value (RFC 9112 section 6.3).
 */
const SINGLE = new Set(['authorization', 'content-length', 'content-type', 'host', 'origin', 'range', 'transfer-encoding', 'x-request-id', 'x-share-password'])
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/
/**
 * Generated request ids: a random prefix per process and a counter. Unique, and cheap:
 * drawing random bytes per request cost a third of the main thread under load.
 */
const ID_PREFIX = randomBytes(6).toString('base64url')
let idCounter = 0
const nextRequestId = () => `${ID_PREFIX}${(++idCounter).toString(36)}`

/** A request head as an engine parsed it. */
export interface RequestHead {
  /** As sent. */
  readonly method: string
  /** The target's path, without the query. */
  readonly path: string
  /** The raw query string, without `?`. */
  readonly query: string
  readonly remoteAddress: string
  /** Every header line in order, repeated ones included; names in any case. */
  readonly headers: Iterable<readonly [string, string]>
}

/** Why a request is refused before routing (answered, then the connection is closed). */
interface Refusal {
  readonly status: number
  readonly error: ApiError
}

/**
 * Headers by lower-case name (repeated list headers joined with ", "), and the
 * reason to refuse the request, if any.
 */
function readHead(method: string, pairs: Iterable<readonly [string, string]>): { headers: Map<string, string>; refusal: Refusal | null } {
  const headers = new Map<string, string>()
  let refusal: Refusal | null = null
  const refuse = (status: number, error: ApiError) => (refusal ??= { status, error })
  let count = 0
  for (const [rawName, value] of pairs) {
    count++
    const name = rawName.toLowerCase()
    const prev = headers.get(name)
    if (prev === undefined) headers.set(name, value)
    else if (!SINGLE.has(name)) headers.set(name, `${prev}, ${value}`)
    else if (name !== 'content-length' || prev !== value) refuse(400, new ApiError('INVALID_INPUT', `the ${name} header is sent more than once`))
  }
  if (count > MAX_HEADERS) refuse(431, new ApiError('INVALID_INPUT', `more than ${MAX_HEADERS} request headers`))
  const cl = headers.get('content-length')
  if (cl !== undefined && !/^\d+$/.test(cl)) refuse(400, new ApiError('INVALID_INPUT', 'Content-Length is not a number'))
  const te = headers.get('transfer-encoding')
  if (te !== undefined) {
    const codings = te.split(',').map((c) => c.trim().toLowerCase())
    if (cl !== undefined) refuse(400, new ApiError('INVALID_INPUT', 'Content-Length and Transfer-Encoding together'))
    else if (codings.at(-1) !== 'chunked' || codings.filter((c) => c === 'chunked').length !== 1) {
      // Without "chunked" last, the body's end cannot be known (RFC 9112 section 6.3).
      refuse(400, new ApiError('INVALID_INPUT', `Transfer-Encoding "${te}" is not supported; send "chunked"`))
    } else if (codings.length > 1) refuse(501, new ApiError('NOT_SUPPORTED', `Transfer-Encoding "${te}": only "chunked" is supported`))
  }
  if (!METHODS.has(method.toUpperCase())) refuse(501, new ApiError('NOT_SUPPORTED', `method ${method} is not supported`))
  return { headers, refusal }
}

/**
 * One request and its reply. An engine subclass supplies the body and the write
 * primitives; everything an engine must not decide on its own is here.
 */
export abstract class Exchange implements HttpRequest {
  readonly method: string
  readonly path: string
  readonly query: URLSearchParams
  readonly remoteAddress: string
  readonly requestId: string
  readonly contentLength: number | null
  protected readonly opts: ServerOptions
  protected readonly abort = new AbortController()
  /** Set when the body is refused before it is read (too large). */
  protected bodyError: FsError | null = null
  /** The connection closes after this reply (refused request, unread body, shutdown). */
  protected closeAfter = false
  readonly #headers: Map<string, string>
  readonly #refusal: Refusal | null
  readonly #started = performance.now()
  #status = 0
  #bytes = 0
  #logged = false
  #settle!: () => void
  /** Resolves once the reply is over (sent, failed or abandoned) and logged. */
  readonly done = new Promise<void>((r) => (this.#settle = r))

  constructor(head: RequestHead, opts: ServerOptions) {
    this.opts = opts
    this.method = head.method.toUpperCase()
    this.path = head.path
    this.query = new URLSearchParams(head.query)
    const { headers, refusal } = readHead(head.method, head.headers)
    this.remoteAddress = opts.trustProxy ? clientAddress(head.remoteAddress, headers.get('x-forwarded-for'), opts.trustProxy) : head.remoteAddress
    this.#headers = headers
    this.#refusal = refusal
    const sent = headers.get('x-request-id')
    this.requestId = sent && REQUEST_ID.test(sent) ? sent : nextRequestId()
    const cl = headers.get('content-length')
    this.contentLength = cl !== undefined && /^\d+$/.test(cl) ? Number(cl) : null
    const max = opts.maxBodyBytes
    if (max !== null && this.contentLength !== null && this.contentLength > max) this.bodyError = tooLarge(max)
  }

  get signal(): AbortSignal {
    return this.abort.signal
  }

  header(name: string): string | undefined {
    return this.#headers.get(name)
  }

  headers(): Iterable<readonly [string, string]> {
    return this.#headers.entries()
  }

  headerBytes(name: string): Uint8Array | undefined {
    const v = this.#headers.get(name)
    return v === undefined ? undefined : Buffer.from(v, this.headerEncoding)
  }

  /** How the engine turned a header's bytes into the string `header` gives, so `headerBytes` can turn it back. */
  protected get headerEncoding(): 'latin1' | 'utf8' {
    return 'utf8'
  }

  abstract get body(): AsyncIterable<Uint8Array>

  /** Answers the request: refused before routing, 503 while shutting down, else the handler's reply. */
  start(draining: boolean): void {
    const refusal = this.#refusal ?? (draining ? { status: 503, error: new ApiError('UNAVAILABLE', 'the server is shutting down') } : null)
    if (refusal) {
      this.closeAfter = true
      const reply = this.#errorReply(refusal.error)
      this.deferRefusal(() => void this.#send({ ...reply, status: refusal.status }))
      return
    }
    this.opts
      .handler(this)
      .catch((err: unknown) => this.#errorReply(err))
      .then((reply) => this.#send(reply))
      .catch(() => {})
  }

  /** When a refusal goes out; uWS must wait until its parser is done with the connection's bytes. */
  protected deferRefusal(send: () => void): void {
    send()
  }

  // Engine primitives ----------------------------------------------------------

  /** The client is gone or the reply is complete: nothing may be written. */
  protected abstract get finished(): boolean
  /** The request body was read to its end (else the connection must close after the reply). */
  protected abstract get bodyComplete(): boolean
  /** Head and whole body; `body` null: none, announcing `reply.length` if set (HEAD, 304). */
  protected abstract writeWhole(reply: HttpReply, body: Uint8Array | null): void
  /** Head of a streamed body: with Content-Length when `total` is known, else chunked. */
  protected abstract writeHead(reply: HttpReply, total: number | undefined): void
  /** One chunk of a streamed body; resolves when more may be written. */
  protected abstract writeChunk(chunk: Uint8Array, total: number | undefined): Promise<void>
  /** Ends a streamed body once every chunk was written. */
  protected abstract endStream(total: number | undefined): void
  /** Breaks the connection: the only honest signal once a reply's head is out. */
  protected abstract destroy(): void

  /** Engines call this when the client goes away. */
  protected clientGone(): void {
    this.abort.abort(cancelled())
  }

  /** Reply headers in writing order: the request id first, then the reply's own. */
  protected headerLines(reply: HttpReply): [string, string][] {
    return [['x-request-id', this.requestId], ...Object.entries(reply.headers ?? {})]
  }

  #errorReply(err: unknown): HttpReply {
    return this.opts.errorReply ? this.opts.errorReply(err, this) : errorReply(err).reply
  }

  // The send path --------------------------------------------------------------

  async #send(reply: HttpReply): Promise<void> {
    if (this.finished) return this.#end(reply, cancelled())
    if (!this.bodyComplete) this.closeAfter = true
    this.#status = reply.status
    let headSent = false
    try {
      const body = reply.body
      if (body === undefined) this.writeWhole(reply, null)
      else if (typeof body === 'string' || body instanceof Uint8Array) {
        const bytes = typeof body === 'string' ? Buffer.from(body) : body
        if (this.method === 'HEAD') this.writeWhole({ ...reply, length: bytes.byteLength }, null)
        else {
          this.#bytes = bytes.byteLength
          this.writeWhole(reply, bytes)
        }
      } else {
        await this.#stream(reply, body, () => (headSent = true))
      }
      this.#end(reply)
    } catch (err) {
      if (!headSent && !this.finished) {
        // Nothing went out yet: the client gets an error it can read, not a cut connection.
        const failed = this.#errorReply(err)
        this.#status = failed.status
        this.#bytes = 0
        this.closeAfter ||= !this.bodyComplete
        this.writeWhole(failed, failed.body === undefined ? null : Buffer.from(typeof failed.body === 'string' ? failed.body : String(failed.body)))
      } else if (!this.finished) this.destroy()
      this.#end(reply, err)
    }
  }

  /**
   * A streamed body. The first chunk is awaited before the head is written, so an empty
   * body becomes a plain `Content-Length: 0` reply and an error before the first byte an
   * error reply.
   */
  async #stream(reply: HttpReply, body: AsyncIterable<Uint8Array>, onHead: () => void): Promise<void> {
    const total = reply.length
    const it = body[Symbol.asyncIterator]()
    let complete = false
    try {
      let next = this.method === 'HEAD' ? null : await it.next()
      if (next === null || next.done) {
        complete = next !== null
        if (next !== null && total !== undefined && total !== 0) throw new FsError('EIO', `body had 0 bytes, ${total} were announced`)
        if (this.finished) throw cancelled()
        this.writeWhole(next === null ? reply : { ...reply, length: 0 }, next === null ? null : new Uint8Array(0))
        return
      }
      if (this.finished) throw cancelled()
      this.writeHead(reply, total)
      onHead()
      while (!next.done) {
        const chunk = next.value
        if (chunk.byteLength > 0) {
          if (this.finished) throw cancelled()
          if (total !== undefined && this.#bytes + chunk.byteLength > total) throw new FsError('EIO', `body is longer than the ${total} bytes announced`)
          await this.writeChunk(chunk, total)
          this.#bytes += chunk.byteLength
        }
        next = await it.next()
      }
      complete = true
      if (total !== undefined && this.#bytes !== total) throw new FsError('EIO', `body had ${this.#bytes} bytes, ${total} were announced`)
      if (this.finished && total === undefined) throw cancelled()
      this.endStream(total)
    } finally {
      // Stopped early (error, client gone, HEAD): let the producer clean up.
      if (!complete) void Promise.resolve(it.return?.()).catch(() => {})
    }
  }

  #end(reply: HttpReply, err?: unknown): void {
    if (this.#logged) return
    this.#logged = true
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
        ...(err === undefined ? {} : { error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) }),
      }
      this.opts.onRequestDone(log)
      this.#settle()
    }
  }
}

/** 204 and 304 carry no body and announce no length (RFC 9110 sections 8.6, 15.3.5). */
export const bodiless = (status: number): boolean => status === 204 || status === 304

export function tooLarge(max: number): FsError {
  return new FsError('EFBIG', `the request body is over the limit of ${max} bytes`)
}

export function cancelled(): FsError {
  return new FsError('ECANCELED', 'the client went away')
}

/** Counts requests in flight, and lets shutdown wait until none is. */
export class InFlight {
  #count = 0
  #idle: (() => void) | null = null

  get count(): number {
    return this.#count
  }

  track(done: Promise<void>): void {
    this.#count++
    void done.then(() => {
      this.#count--
      if (this.#count === 0) this.#idle?.()
    })
  }

  async drain(ms: number): Promise<void> {
    if (this.#count === 0) return
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms)
      this.#idle = () => {
        clearTimeout(t)
        resolve()
      }
    })
  }
}
