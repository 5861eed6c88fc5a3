/**
 * @module front/http/node
 * The node:http engine: used where no native uWebSockets.js build loads (another
 * Node version, OS or CPU), or when `http_engine` is "node". It adapts node:http to
 * the shared exchange (exchange.ts), with the same limits as the uWS engine:
 * - request bodies are the request stream itself, read with its own backpressure
 *   (node pauses the socket while the consumer does not read);
 * - streamed replies wait for 'drain' whenever `write` reports a full buffer;
 * - the connection closing before the reply is complete aborts the request's signal.
 * Node's parser answers what it refuses itself (bad request line, bad or repeated
 * Content-Length, bad chunk framing, bad Transfer-Encoding: 400; headers over the
 * limit: 431) and closes the connection.
 */
import http from 'node:http'
import type { HttpReply } from '../../core/http.js'
import { type HttpServer, type ServerOptions, Exchange, InFlight, MAX_HEADERS, MAX_HEADER_BYTES, bodiless, cancelled, tooLarge } from './exchange.js'

/** Time a client has to send a request's head, and an idle connection stays open (as uWS). */
const HEAD_TIMEOUT_MS = 10_000
/** No byte in either direction for this long closes the connection. */
const IDLE_TIMEOUT_MS = 60_000

export async function listenNode(host: string, port: number, opts: ServerOptions): Promise<HttpServer> {
  const inFlight = new InFlight()
  let draining = false
  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse, expectsContinue = false): void => {
    const exchange = new NodeExchange(req, res, opts, expectsContinue)
    inFlight.track(exchange.done)
    exchange.start(draining)
  }
  const server = http.createServer(
    {
      maxHeaderSize: MAX_HEADER_BYTES,
      // Uploads may take hours: only the head has a deadline, and silence (below).
      requestTimeout: 0,
      headersTimeout: HEAD_TIMEOUT_MS,
      keepAliveTimeout: HEAD_TIMEOUT_MS,
    },
    onRequest,
  )
  // An Expect other than 100-continue is served as uWS serves it (RFC 9110 lets a server
  // ignore it), not with node's bare 417 (no envelope, no request id).
  server.on('checkExpectation', onRequest)
  // `Expect: 100-continue`: the interim 100 goes out when the handler first reads the
  // body, i.e. once it has checked who is asking and what they may do (node would send it
  // at once); a request refused before that never invites its body.
  server.on('checkContinue', (req: http.IncomingMessage, res: http.ServerResponse) => onRequest(req, res, true))
  // One more than the limit, so that a request over it is seen (and refused with 431).
  server.maxHeadersCount = MAX_HEADERS + 1
  server.setTimeout(IDLE_TIMEOUT_MS, (socket) => socket.destroy())
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(new Error(`cannot listen on ${host}:${port} (${(err as NodeJS.ErrnoException).code ?? err.message})`)))
    server.listen(port, host, () => resolve())
  })
  const address = server.address()
  return {
    port: typeof address === 'object' && address ? address.port : port,
    get inFlight() {
      return inFlight.count
    },
    stopListening() {
      draining = true
      server.close()
      server.closeIdleConnections()
    },
    drain: (ms) => inFlight.drain(ms),
    close() {
      draining = true
      server.close()
      server.closeAllConnections()
    },
  }
}

function headOf(req: http.IncomingMessage) {
  const url = req.url ?? '/'
  const q = url.indexOf('?')
  const headers: [string, string][] = []
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) headers.push([req.rawHeaders[i]!, req.rawHeaders[i + 1]!])
  return {
    method: req.method ?? 'GET',
    path: q < 0 ? url : url.slice(0, q),
    query: q < 0 ? '' : url.slice(q + 1),
    remoteAddress: req.socket.remoteAddress ?? '',
    headers,
  }
}

class NodeExchange extends Exchange {
  readonly #req: http.IncomingMessage
  readonly #res: http.ServerResponse
  #done = false
  /** The client waits for `100 Continue` before it sends the body. */
  #continuePending: boolean

  constructor(req: http.IncomingMessage, res: http.ServerResponse, opts: ServerOptions, expectsContinue: boolean) {
    super(headOf(req), opts)
    this.#req = req
    this.#res = res
    this.#continuePending = expectsContinue
    res.once('close', () => {
      if (!res.writableFinished) {
        this.#done = true
        this.clientGone()
      }
    })
  }

  get body(): AsyncIterable<Uint8Array> {
    return { [Symbol.asyncIterator]: () => this.#readBody() }
  }

  protected get finished(): boolean {
    return this.#done
  }

  protected get bodyComplete(): boolean {
    return this.#req.complete
  }

  /** node:http gives header values one character per byte (latin1): `headerBytes` is exact. */
  protected override get headerEncoding(): 'latin1' {
    return 'latin1'
  }

  async *#readBody(): AsyncGenerator<Uint8Array, void, undefined> {
    if (this.bodyError) throw this.bodyError
    if (this.#continuePending) {
      this.#continuePending = false
      if (!this.#done && !this.#res.headersSent) this.#res.writeContinue()
    }
    const max = this.opts.maxBodyBytes
    let received = 0
    try {
      // destroyOnReturn false: a consumer that stops early (a JSON body over its cap)
      // must not destroy the request, and with it the connection its answer goes on.
      for await (const chunk of this.#req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
        received += chunk.byteLength
        if (max !== null && received > max) this.bodyError = tooLarge(max)
        if (this.bodyError) throw this.bodyError
        yield chunk
      }
    } catch (err) {
      if (err === this.bodyError) throw err
      throw cancelled()
    }
    if (!this.#req.complete) throw cancelled()
  }

  protected writeWhole(reply: HttpReply, body: Uint8Array | null): void {
    const res = this.#res
    this.#writeHead(reply)
    if (body !== null) res.setHeader('content-length', body.byteLength)
    else if (reply.length !== undefined) res.setHeader('content-length', reply.length)
    else if (!bodiless(reply.status) && this.method !== 'HEAD') res.setHeader('content-length', 0)
    res.end(body ?? undefined)
    this.#done = true
  }

  protected writeHead(reply: HttpReply, total: number | undefined): void {
    this.#writeHead(reply)
    if (total !== undefined) this.#res.setHeader('content-length', total)
  }

  protected async writeChunk(chunk: Uint8Array): Promise<void> {
    if (this.#res.write(chunk)) return
    await new Promise<void>((resolve, reject) => {
      const settle = () => {
        this.#res.off('drain', settle)
        this.#res.off('close', settle)
        if (this.#done) reject(cancelled())
        else resolve()
      }
      this.#res.on('drain', settle)
      this.#res.on('close', settle)
    })
  }

  protected endStream(): void {
    this.#res.end()
    this.#done = true
  }

  protected destroy(): void {
    this.#done = true
    this.#res.destroy()
  }

  #writeHead(reply: HttpReply): void {
    const res = this.#res
    res.statusCode = reply.status
    for (const [k, v] of this.headerLines(reply)) res.setHeader(k, v)
    // Node closes the connection after a reply that says so.
    if (this.closeAfter) res.setHeader('connection', 'close')
  }
}
