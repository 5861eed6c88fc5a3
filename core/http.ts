/**
 * @module core/http
 * Neutral HTTP types: the HTTP API's routes and the S3 and MCP gateways are written
 * against these, and the HTTP engines (front/http/: uWebSockets.js or node:http)
 * adapt their server library to them. Handlers can then be tested in-process, and no
 * handler knows which engine serves.
 */

export interface HttpRequest {
  /** Upper case. */
  readonly method: string
  /** URL path without the query, as sent (not percent-decoded). */
  readonly path: string
  /** Decoded query parameters. */
  readonly query: URLSearchParams
  /** A request header by lower-case name. */
  header(name: string): string | undefined
  /** Every header, by lower-case name (repeated ones joined as `header` gives them): e.g. S3's `x-amz-meta-*`. */
  headers(): Iterable<readonly [string, string]>
  /**
   * A header's value byte for byte as sent (what S3 signs); absent: the UTF-8 of `header`.
   * Engines differ in how `header` renders bytes outside ASCII (node:http one character
   * per byte, uWS decoded UTF-8), so a handler that needs the bytes asks for them here.
   */
  headerBytes?(name: string): Uint8Array | undefined
  readonly remoteAddress: string
  /** Echoed from the client's X-Request-Id when sane, else generated. */
  readonly requestId: string
  /** Aborted when the client goes away. */
  readonly signal: AbortSignal
  /** Announced body length; null when chunked or absent. */
  readonly contentLength: number | null
  /**
   * The request body, to iterate at most once. Throws FsError ECANCELED when the client
   * aborts, EFBIG past the configured upload limit. Each chunk is the consumer's own.
   */
  readonly body: AsyncIterable<Uint8Array>
}

export type HttpBody = string | Uint8Array | AsyncIterable<Uint8Array>

export interface HttpReply {
  readonly status: number
  /** Lower-case names. Content-Length is set from the body or `length`, never here. */
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: HttpBody
  /**
   * Length of a streamed body (sent as Content-Length); absent: chunked. On a reply with
   * no body (HEAD) it is the Content-Length to announce.
   */
  readonly length?: number
  /** Called once the reply is over: sent, failed or abandoned (err set then). */
  readonly finally?: (err?: unknown) => void
}

export type HttpHandler = (req: HttpRequest) => Promise<HttpReply>
