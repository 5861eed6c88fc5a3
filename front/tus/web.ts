/**
 * @module front/tus/web
 * core/http ⇄ the web-standard Request and Response that @tus/server's `handleWeb`
 * speaks. Only the protocol's own headers cross over: credentials, cookies and the
 * rest stay on filegate's side, which has already authenticated the caller.
 */
import type { HttpReply, HttpRequest } from '../../core/http.js'

/** The request headers @tus/server reads. */
const TUS_REQUEST_HEADERS = [
  'tus-resumable',
  'upload-length',
  'upload-defer-length',
  'upload-offset',
  'upload-metadata',
  'upload-concat',
  'content-type',
  'content-length',
] as const

/** Never copied back: the HTTP engine sets the length and manages the connection; CORS is front/cors.ts's. */
const dropped = (name: string) => name === 'content-length' || name === 'connection' || name.startsWith('access-control-')

/**
 * The request as a web Request (on a placeholder origin: @tus/server builds only
 * relative locations here). Its body streams from `req.body` as the library pulls.
 */
export function toWebRequest(req: HttpRequest): Request {
  const headers = new Headers()
  for (const name of TUS_REQUEST_HEADERS) {
    const v = req.header(name)
    if (v !== undefined) headers.set(name, v)
  }
  const query = req.query.size > 0 ? `?${req.query}` : ''
  const init: RequestInit & { duplex?: 'half' } = { method: req.method, headers }
  if (req.method === 'POST' || req.method === 'PATCH') {
    init.body = streamOf(req.body)
    init.duplex = 'half'
  }
  return new Request(`http://filegate.invalid${req.path}${query}`, init)
}

/** A pull stream over `body`: the next chunk is read from the client only when the library asks. */
function streamOf(body: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  const it = body[Symbol.asyncIterator]()
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await it.next()
      if (done) controller.close()
      else controller.enqueue(value)
    },
    async cancel(reason) {
      await it.return?.(reason)
    },
  })
}

/** A web Response as an HttpReply (its body is a short text at most). */
export async function fromWebResponse(res: Response): Promise<HttpReply> {
  const headers: Record<string, string> = {}
  res.headers.forEach((value, name) => {
    if (!dropped(name)) headers[name] = value
  })
  const body = new Uint8Array(await res.arrayBuffer())
  if (body.length > 0) return { status: res.status, headers, body }
  delete headers['content-type'] // a web Response types even an empty body
  return { status: res.status, headers }
}
