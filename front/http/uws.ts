/**
 * @module front/http/uws
 * The uWebSockets.js engine, and the ONLY file that imports uWebSockets.js (a native
 * build per Node ABI: the only Node-version-bound part). It adapts uWS's callback API
 * to the shared exchange (exchange.ts):
 * - request bodies: `res.onData` chunks are copied (uWS reuses its buffer) into a
 *   bounded queue read as an async iterable; the socket is paused while the queue is
 *   full (`res.pause()`/`res.resume()`; uWS still hands over what it already read);
 * - streamed replies: `tryEnd` with a known length or `write` when chunked, waiting on
 *   `onWritable` whenever uWS reports backpressure; the next chunk is pulled only then;
 * - every write outside the handler's synchronous part is corked;
 * - `onAborted` aborts the request's signal and stops the reply's stream.
 * What uWS's parser does before filegate sees a request (HTTP/1.0 → 505, no pipelining
 * behind a pending answer, unchecked chunk CRLFs, its `uWebSockets: 20` header) is in
 * docs/http-engines.md.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type * as UWS from 'uWebSockets.js'
import type { HttpReply } from '../../core/http.js'
import { type HttpServer, type ServerOptions, Exchange, InFlight, MAX_HEADER_BYTES, bodiless, cancelled, tooLarge } from './exchange.js'
import { statusLine } from './status.js'

const require = createRequire(import.meta.url)

/** The idle time announced in `Keep-Alive: timeout=`, below the shortest uWS keeps an idle connection. */
const KEEP_ALIVE_HINT_S = 5

let loaded: { uws: typeof UWS; version: string } | null = null

/**
 * Loads uWebSockets.js once. Throws when no native build loads here (this build has
 * no JS fallback): its message names the Node versions and platforms it supports.
 */
export function loadUws(): { uws: typeof UWS; version: string } {
  if (loaded) return loaded
  // Read by the native module when it loads: its default (4 KiB) is tighter than the
  // node:http engine's, and a sealed token with a private key can be a few KiB.
  process.env.UWS_HTTP_MAX_HEADERS_SIZE ??= String(MAX_HEADER_BYTES)
  // package.json is not exported: read it from beside the resolved entry point.
  const pkg = JSON.parse(readFileSync(join(dirname(require.resolve('uWebSockets.js')), 'package.json'), 'utf8')) as { name: string; version: string }
  const version = `${pkg.name}@${pkg.version}`
  let uws: typeof UWS
  try {
    uws = require('uWebSockets.js') as typeof UWS
  } catch (err) {
    throw new Error(`${version}: ${(err as Error).message.replace(/\s+/g, ' ')}`)
  }
  loaded = { uws, version }
  return loaded
}

/** Body bytes buffered before the socket is paused; it resumes when the consumer takes them. */
const BODY_HIGH = 4 * 1024 * 1024

export async function listenUws(host: string, port: number, opts: ServerOptions): Promise<HttpServer> {
  const { uws } = loadUws()
  const app = uws.App()
  const inFlight = new InFlight()
  let draining = false

  app.any('/*', (res, req) => {
    const exchange = new UwsExchange(res, req, opts)
    inFlight.track(exchange.done)
    exchange.start(draining)
  })

  const socket = await new Promise<UWS.us_listen_socket>((resolve, reject) => {
    app.listen(host, port, (s) => (s ? resolve(s) : reject(new Error(`cannot listen on ${host}:${port} (in use, or not an address of this machine)`))))
  })
  let listening = true
  return {
    port: uws.us_socket_local_port(socket),
    get inFlight() {
      return inFlight.count
    },
    stopListening() {
      draining = true
      if (listening) uws.us_listen_socket_close(socket)
      listening = false
    },
    drain: (ms) => inFlight.drain(ms),
    close() {
      draining = true
      listening = false
      app.close()
    },
  }
}

/**
 * Reads everything uWS offers during the handler callback: `req` is valid only then.
 * Header values come decoded as UTF-8, and uWS's parser has already trimmed every byte
 * outside ASCII from both ends of each (it takes them for white space), which nothing
 * here can restore: a listener that needs the bytes as sent asks for node:http
 * (core/gateway.ts, exactHeaders), as the S3 gateway does.
 */
function headOf(res: UWS.HttpResponse, req: UWS.HttpRequest) {
  const headers: [string, string][] = []
  req.forEach((k, v) => headers.push([k, v]))
  return {
    method: req.getCaseSensitiveMethod(),
    path: req.getUrl(),
    query: req.getQuery() ?? '',
    remoteAddress: Buffer.from(res.getRemoteAddressAsText()).toString(),
    headers,
  }
}

class UwsExchange extends Exchange {
  readonly #res: UWS.HttpResponse
  /** The response is complete or the client is gone: `res` must not be touched. */
  #done = false
  // Request body queue.
  readonly #chunks: Buffer[] = []
  #queued = 0
  #received = 0
  #bodyEnded = false
  #paused = false
  #wake: (() => void) | null = null
  #writable: { retry: (offset: number) => boolean; settle: (alive: boolean) => void } | null = null
  #writableHooked = false

  constructor(res: UWS.HttpResponse, req: UWS.HttpRequest, opts: ServerOptions) {
    super(headOf(res, req), opts)
    this.#res = res
    res.onAborted(() => this.#onAborted())
    if (this.method !== 'GET' && this.method !== 'HEAD') res.onData((ab, last) => this.#onData(ab, last))
    // A request without a body is complete now: uWS reports its empty end only after the
    // handler's microtasks, by when a quick reply (a preflight, a 401) may already go out,
    // and must not close the connection for a body that never was.
    if (this.method === 'GET' || this.method === 'HEAD' || this.contentLength === 0 || (this.contentLength === null && this.header('transfer-encoding') === undefined)) {
      this.#bodyEnded = true
    }
  }

  get body(): AsyncIterable<Uint8Array> {
    return { [Symbol.asyncIterator]: () => this.#readBody() }
  }

  protected get finished(): boolean {
    return this.#done
  }

  protected get bodyComplete(): boolean {
    return this.#bodyEnded
  }

  /**
   * uWS parses every request already in its buffer before returning to the event loop,
   * and runs microtasks between them: a reply that closes the connection must wait a
   * turn, or uWS parses (and answers) whatever the refused request smuggled behind it.
   * Waiting, a request pipelined behind makes uWS close the connection instead.
   */
  protected override deferRefusal(send: () => void): void {
    setImmediate(send)
  }

  // Request body ------------------------------------------------------------

  #onData(ab: ArrayBuffer, last: boolean): void {
    if (this.#done) return
    this.#received += ab.byteLength
    const max = this.opts.maxBodyBytes
    if (max !== null && this.#received > max && !this.bodyError) this.bodyError = tooLarge(max)
    // A refused body (too large) is dropped as it arrives, not buffered.
    if (ab.byteLength > 0 && !this.bodyError) {
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
      if (this.bodyError) throw this.bodyError
      if (this.#chunks.length > 0) {
        yield this.#take()
        continue
      }
      if (this.#bodyEnded) return
      if (this.abort.signal.aborted) throw cancelled()
      await new Promise<void>((r) => (this.#wake = r))
    }
  }

  /** Everything queued, as one chunk that owns its whole buffer. */
  #take(): Uint8Array {
    const out = this.#chunks.length === 1 ? this.#chunks[0]! : concatOwned(this.#chunks, this.#queued)
    this.#chunks.length = 0
    this.#queued = 0
    if (this.#paused && !this.#done) {
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

  // Reply primitives --------------------------------------------------------

  protected writeWhole(reply: HttpReply, body: Uint8Array | null): void {
    this.#corked(() => {
      this.#writeHead(reply)
      if (body !== null) this.#res.end(body, this.closeAfter)
      // HEAD: given a length, endWithoutBody takes the reply for unfinished (none of its
      // bytes were written) and closes the connection after it, which a client reusing
      // the connection sees as a hang-up; so the length goes in a header of our own.
      else if (reply.length !== undefined && this.closeAfter) this.#res.endWithoutBody(reply.length, true)
      else if (reply.length !== undefined) {
        this.#res.writeHeader('Content-Length', String(reply.length))
        this.#res.endWithoutBody()
      }
      // 204, 304, or HEAD of a body whose length is unknown (a transformed download):
      // announce no length at all. Only a call without arguments does that: any
      // argument makes uWS announce one (`undefined` a huge one), so closing costs a 0.
      else if (bodiless(reply.status) || this.method === 'HEAD') {
        if (this.closeAfter) this.#res.endWithoutBody(0, true)
        else this.#res.endWithoutBody()
      }
      else this.#res.end(undefined, this.closeAfter)
    })
    this.#done = true
  }

  protected writeHead(reply: HttpReply): void {
    this.#corked(() => this.#writeHead(reply))
  }

  protected async writeChunk(chunk: Uint8Array, total: number | undefined): Promise<void> {
    if (total === undefined) await this.#write(chunk)
    else await this.#tryEnd(chunk, total)
  }

  protected endStream(total: number | undefined): void {
    // A known length ended with the tryEnd of its last byte.
    if (total === undefined) this.#corked(() => this.#res.end(undefined, this.closeAfter))
    this.#done = true
  }

  protected destroy(): void {
    if (!this.#done) this.#res.close()
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
    if (done) this.#done = true
    if (ok || done) return
    await this.#whenWritable((offset) => {
      const [ok2, done2] = this.#res.tryEnd(chunk.subarray(offset - start), total)
      if (done2) this.#done = true
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
      this.#writable = { retry, settle: (alive) => (alive ? resolve() : reject(cancelled())) }
    })
  }

  #writeHead(reply: HttpReply): void {
    const res = this.#res.writeStatus(statusLine(reply.status))
    for (const [k, v] of this.headerLines(reply)) res.writeHeader(k, v)
    // uWS closes a connection idle for 8 to 12 s (10 s, checked every 4) and says nothing:
    // a client reusing it at that moment gets a reset. Announced, clients retire it first.
    if (!this.closeAfter) res.writeHeader('Keep-Alive', `timeout=${KEEP_ALIVE_HINT_S}`)
  }

  #corked(fn: () => void): void {
    if (!this.#done) this.#res.cork(fn)
  }

  #onAborted(): void {
    this.#done = true
    this.clientGone()
    this.#wakeBody()
    const w = this.#writable
    this.#writable = null
    w?.settle(false)
  }
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
