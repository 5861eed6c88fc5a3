/**
 * @module gateways/mcp/sse-transport
 * The legacy HTTP+SSE transport (MCP 2024-11-05), as the SDK's `Transport` over
 * core/http: `GET /sse` is the event stream (its first event, `endpoint`, names where to
 * POST: `/messages?sessionId=<id>`), and every message of the server goes down it as a
 * `message` event. The SDK's own SSEServerTransport writes to node's ServerResponse,
 * which filegate's engines do not have.
 *
 * Each POSTed request keeps its credential's grant until it is answered (or cancelled,
 * or the session ends): the answer comes on the stream, after the POST's 202.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import {
  type JSONRPCMessage,
  type MessageExtraInfo,
  type RequestId,
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
} from '@modelcontextprotocol/sdk/types.js'
import type { Grant } from './grant.js'

const encoder = new TextEncoder()

export class SseTransport implements Transport {
  readonly sessionId: string
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void
  readonly #endpoint: string
  readonly #keepAliveMs: number
  readonly #queue: Uint8Array[] = []
  #wake: (() => void) | null = null
  #closed = false
  /** Grants of requests not answered yet, by request id (a client may reuse an id). */
  readonly #grants = new Map<RequestId, Grant[]>()

  constructor(sessionId: string, endpoint: string, keepAliveMs: number) {
    this.sessionId = sessionId
    this.#endpoint = endpoint
    this.#keepAliveMs = keepAliveMs
  }

  async start(): Promise<void> {
    this.#push(`event: endpoint\ndata: ${this.#endpoint}\n\n`)
  }

  /** The GET reply's body: the queued events as they come, until the session or the client ends it. */
  async *stream(signal: AbortSignal): AsyncGenerator<Uint8Array> {
    const stop = () => void this.close()
    signal.addEventListener('abort', stop, { once: true })
    const keepAlive = setInterval(() => this.#queue.length === 0 && this.#push(': keepalive\n\n'), this.#keepAliveMs)
    try {
      for (;;) {
        const chunk = this.#queue.shift()
        if (chunk !== undefined) yield chunk
        else if (this.#closed) return
        else await new Promise<void>((resolve) => (this.#wake = resolve))
      }
    } finally {
      clearInterval(keepAlive)
      signal.removeEventListener('abort', stop)
      void this.close()
    }
  }

  /** A message POSTed to /messages, with the grant of the request that carried it. */
  deliver(message: JSONRPCMessage, grant: Grant, extra: MessageExtraInfo): void {
    if (this.#closed) {
      grant.release()
      return
    }
    if (isJSONRPCRequest(message)) this.#grants.set(message.id, [...(this.#grants.get(message.id) ?? []), grant])
    if (isJSONRPCNotification(message) && message.method === 'notifications/cancelled') this.#answered((message.params as { requestId?: RequestId }).requestId)
    this.onmessage?.(message, extra)
    if (!isJSONRPCRequest(message)) grant.release()
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) throw new Error('the SSE stream is closed')
    this.#push(`event: message\ndata: ${JSON.stringify(message)}\n\n`)
    if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) this.#answered(message.id)
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    for (const list of this.#grants.values()) for (const g of list) g.release()
    this.#grants.clear()
    this.#wake?.()
    this.onclose?.()
  }

  #answered(id: RequestId | undefined): void {
    if (id === undefined) return
    const list = this.#grants.get(id)
    list?.shift()?.release()
    if (list?.length === 0) this.#grants.delete(id)
  }

  #push(text: string): void {
    this.#queue.push(encoder.encode(text))
    const wake = this.#wake
    this.#wake = null
    wake?.()
  }
}
