/**
 * HTTP requests sent byte for byte (node:http): `fetch` and URL parsers resolve `..`
 * and `%2e%2e` before sending, which is what the fuzzer must not let happen. A request
 * the client itself cannot send (a header Node refuses), or one whose head is over the
 * engines' limit (refused by the engine before filegate's code), is `null`. One connection per
 * request, so that a failure belongs to the case that caused it.
 */
import { Agent, type ClientRequest, type OutgoingHttpHeaders, request } from 'node:http'

export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly body: Buffer
}

const agent = new Agent({ keepAlive: false })

/** Over this, the HTTP engine refuses the request head itself (front/http/exchange.ts MAX_HEADER_BYTES). */
const MAX_HEAD = 16 * 1024

/** Gives up after `timeoutMs` of silence: a request that never ends is a stuck request, which is a failure. */
export function raw(base: string, method: string, pathAndQuery: string, headers: OutgoingHttpHeaders = {}, body?: Uint8Array, opts: { timeoutMs?: number; from?: string } = {}): Promise<Answer | null> {
  const timeoutMs = opts.timeoutMs ?? 60_000
  // The head as sent, give or take what Node adds (Host, Content-Length, the version): a margin of 256 bytes.
  const head = 256 + method.length + pathAndQuery.length + Object.entries(headers).reduce((n, [k, v]) => n + k.length + String(v).length + 4, 0)
  const u = new URL(base)
  return new Promise((resolve, reject) => {
    let req: ClientRequest
    try {
      // Node sends a DELETE's or OPTIONS's body with neither Content-Length nor chunked framing unless told: say its length.
      const framed = body === undefined || Object.keys(headers).some((k) => k.toLowerCase() === 'content-length' || k.toLowerCase() === 'transfer-encoding') ? headers : { ...headers, 'content-length': body.length }
      req = request({ agent, ...(opts.from ? { localAddress: opts.from } : {}), host: u.hostname, port: Number(u.port), method, path: pathAndQuery, headers: framed, timeout: timeoutMs }, (res) => {
        const h = new Headers()
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v)
        if (res.statusCode === 431 && head > MAX_HEAD) {
          // A head over the limit is refused by the HTTP engine itself (uWS's own 431 page), before filegate's code: not judged.
          req.destroy()
          return resolve(null)
        }
        if (res.statusCode === 200 && h.get('content-type')?.startsWith('text/event-stream')) {
          // An event stream stays open by design: its head is the answer.
          req.destroy()
          return resolve({ status: 200, headers: h, body: Buffer.alloc(0) })
        }
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, headers: h, body: Buffer.concat(chunks) })
        })
        res.on('error', reject)
      })
    } catch {
      resolve(null) // not sendable (Node refuses the path or a header): nothing reached the server
      return
    }
    req.on('timeout', () => req.destroy(new Error(`${method} ${pathAndQuery.slice(0, 200)}: no answer within ${timeoutMs} ms (a stuck request)`)))
    req.on('error', (e: Error & { code?: string }) => {
      // uWS's own 431 page for an oversized head comes with a body even to HEAD: a client parse error, not filegate's answer.
      if (head > MAX_HEAD && e.code?.startsWith('HPE_')) resolve(null)
      else reject(e)
    })
    req.end(body)
  })
}

/** Closes the kept-alive connections (at the end of a run). */
export function closeConnections(): void {
  agent.destroy()
}
