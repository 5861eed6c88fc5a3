/**
 * @module gateways/mcp/web
 * core/http's request and reply ↔ the web-standard Request and Response the SDK's
 * Streamable HTTP transport works on. Bodies stream both ways: the request body is
 * pulled as the transport reads it, an event stream is sent as it is written.
 */
import type { HttpReply, HttpRequest } from '../../core/http.js'

/** The request headers the transport reads (core/http gives no list of all of them). */
const FORWARDED = ['accept', 'content-type', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id', 'origin']

/** An SSE comment sent first, so that a stream's head goes out before its first event. */
const PRELUDE = new TextEncoder().encode(': filegate\n\n')

/** `body`: the request's body when the caller has read it already (else it is streamed). */
export function toWebRequest(req: HttpRequest, url: string, body?: string): Request {
  const headers = new Headers()
  for (const name of FORWARDED) {
    const v = req.header(name)
    if (v !== undefined) headers.set(name, v)
  }
  const init: RequestInit & { duplex?: 'half' } = { method: req.method, headers, signal: req.signal }
  if (body !== undefined) {
    init.body = body
  } else if (req.method === 'POST') {
    const it = req.body[Symbol.asyncIterator]()
    init.body = new ReadableStream<Uint8Array>({
      async pull(c) {
        const next = await it.next()
        if (next.done) c.close()
        else c.enqueue(next.value)
      },
      async cancel() {
        await it.return?.()
      },
    })
    init.duplex = 'half'
  }
  return new Request(url, init)
}

/**
 * A web Response as a reply. An event stream is streamed (and cancelled when the client
 * goes away, so the transport forgets it); any other body is short and read whole.
 */
export async function toHttpReply(res: Response, signal: AbortSignal, extraHeaders: Record<string, string> = {}): Promise<HttpReply> {
  const headers: Record<string, string> = {}
  res.headers.forEach((v, k) => {
    // The engine frames the body and manages the connection.
    if (k !== 'connection' && k !== 'content-length' && k !== 'transfer-encoding') headers[k] = v
  })
  Object.assign(headers, extraHeaders)
  if (res.body === null) return { status: res.status, headers }
  if (!(headers['content-type'] ?? '').startsWith('text/event-stream')) {
    return { status: res.status, headers, body: new Uint8Array(await res.arrayBuffer()) }
  }
  return { status: res.status, headers, body: eventStream(res.body, signal) }
}

async function* eventStream(body: ReadableStream<Uint8Array>, signal: AbortSignal): AsyncGenerator<Uint8Array> {
  const reader = body.getReader()
  const stop = () => void reader.cancel().catch(() => {})
  signal.addEventListener('abort', stop, { once: true })
  try {
    yield PRELUDE
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      yield value
    }
  } finally {
    signal.removeEventListener('abort', stop)
    stop()
  }
}
