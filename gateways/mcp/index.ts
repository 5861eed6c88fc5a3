/**
 * @module gateways/mcp
 * The MCP gateway (docs/mcp-gateway.md): filegate's files as MCP tools and resources,
 * on the main HTTP port:
 * - Streamable HTTP (protocol 2025-11-25) at `/mcp`: POST, GET, DELETE, sessions by
 *   `Mcp-Session-Id`, through the SDK's web-standard transport (gateways/mcp/web.ts);
 * - the legacy HTTP+SSE transport at `/sse` and `/messages` (gateways/mcp/sse-transport.ts).
 * Every request carries `Authorization: Bearer` (a filegate session token, or an access
 * token of filegate's OAuth server for the resource `<public_url>/mcp`), checked by
 * `GatewayContext.bearer`; a present `Origin` must be the service's own or a configured
 * CORS origin (DNS rebinding). Sessions: gateways/mcp/sessions.ts; Streamable HTTP
 * sessions are also kept in the state store, so any node serves them
 * (gateways/mcp/stored-sessions.ts, gateways/mcp/restore.ts); legacy SSE sessions live
 * on the node that holds their stream.
 */
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js'
import type { DoorMeter, DrainRegistration } from '../../core/doors.js'
import type { Gateway, GatewayContext } from '../../core/gateway.js'
import { countCalls } from './call-meter.js'
import type { HttpHandler, HttpReply, HttpRequest } from '../../core/http.js'
import { CallSlots, workOf } from './call-slots.js'
import { type Grant, authInfoOf, grantFrom } from './grant.js'
import { createMcpServer } from './server.js'
import { initializeParams, replayInitialize } from './restore.js'
import { type McpSession, SessionTable, newSessionId } from './sessions.js'
import { StoredSessions } from './stored-sessions.js'
import { SseTransport } from './sse-transport.js'
import { DEFAULT_LIMITS, type ToolLimits } from './tools.js'
import { toHttpReply, toWebRequest } from './web.js'

export interface McpGatewayOptions {
  /** The HTTP API's address as clients reach it (`public_url`); known once the port is. */
  readonly publicUrl: () => string
  /** Browser origins allowed besides the service's own (`cors.origins`). */
  readonly corsOrigins: readonly string[]
  readonly idleSeconds: number
  readonly maxSessions: number
  /** Sessions one subject (login) may hold (default 32). */
  readonly sessionsPerSubject?: number
  /** Sessions one client address may hold (default 100). */
  readonly sessionsPerAddress?: number
  /** Tool calls one subject may have running at once (default 8). */
  readonly callsPerSubject?: number
  /** Messages one JSON-RPC batch may hold (default 20). */
  readonly maxBatch?: number
  readonly version: string
  readonly limits?: Partial<ToolLimits>
  /** SSE comment lines keep idle streams open through proxies and the engine's idle timeout (default 5 s). */
  readonly keepAliveMs?: number
}

/** A JSON-RPC message larger than this is refused (413). */
const MAX_MESSAGE_BYTES = 4 * 1024 * 1024

export function createMcpGateway(opts: McpGatewayOptions): Gateway {
  let ctx: GatewayContext | null = null
  const limits: ToolLimits = { ...DEFAULT_LIMITS, ...opts.limits }
  const keepAliveMs = opts.keepAliveMs ?? 5000
  let stored: StoredSessions | null = null
  /** The door's counters (core/doors.ts) and its share of the drain, once started. */
  let meter: DoorMeter | null = null
  let drain: DrainRegistration | null = null
  const sessions = new SessionTable(
    { idleMs: opts.idleSeconds * 1000, max: opts.maxSessions, perSubject: opts.sessionsPerSubject ?? 32, perAddress: opts.sessionsPerAddress ?? 100 },
    (s) => {
      if (s.kind === 'streamable') stored?.remove(s.id).catch((err: unknown) => ctx?.log('warn', 'mcp: an evicted session stays in the store', { error: String(err) }))
    },
    () => meter?.session() ?? (() => {}),
  )
  /** Sessions being rebuilt from the store here, by id and subject: one rebuild each. */
  const rebuilding = new Map<string, Promise<string | null>>()
  const corsOrigins = new Set(opts.corsOrigins)
  const resource = () => `${opts.publicUrl()}/mcp`

  const calls = { running: 0 }
  const slots = new CallSlots({ perSubject: opts.callsPerSubject ?? 8, maxBatch: opts.maxBatch ?? 20 })
  const newServer = () =>
    createMcpServer({
      version: opts.version,
      limits,
      calls,
      publicUrl: opts.publicUrl,
      log: (level, msg, fields) => ctx?.log(level, msg, fields),
    })

  /** Origin, then the bearer credential: a request that passes both gets its grant. */
  const guarded =
    (handle: (req: HttpRequest, grant: Grant, c: GatewayContext) => Promise<HttpReply>): HttpHandler =>
    async (req) => {
      if (ctx === null) return jsonReply(503, { error: 'unavailable', error_description: 'the MCP gateway is starting or stopping' })
      const origin = req.header('origin')
      if (origin !== undefined && origin !== new URL(opts.publicUrl()).origin && !corsOrigins.has(origin)) {
        return jsonReply(403, { error: 'forbidden', error_description: `requests from the web origin ${origin} are not allowed (DNS rebinding protection): add it to cors.origins` })
      }
      const auth = req.header('authorization')
      const m = auth === undefined ? null : /^Bearer +(\S+) *$/i.exec(auth)
      if (m === null) return unauthorized(req, auth === undefined ? null : 'the Authorization header must be "Bearer <token>"')
      const res = await ctx.bearer(m[1]!, { resource: resource(), address: req.remoteAddress, requestId: req.requestId })
      if (!res.ok) {
        if (res.reason === 'unavailable') return jsonReply(503, { error: 'temporarily_unavailable', error_description: res.message }, { 'retry-after': '5' })
        return unauthorized(req, res.message)
      }
      const grant = grantFrom(meter ? { ...res, fs: meter.fs(res.fs) } : res, req.requestId)
      try {
        return await handle(req, grant, ctx)
      } catch (err) {
        grant.release()
        throw err
      }
    }

  const unauthorized = (req: HttpRequest, problem: string | null): HttpReply => {
    // The metadata of the address the client used: an SSE client checks that the resource is the URL it started from (/sse).
    const at = req.path.startsWith('/mcp') ? '/mcp' : '/sse'
    const meta = `resource_metadata="${opts.publicUrl()}/.well-known/oauth-protected-resource${at}"`
    const www = problem === null ? `Bearer ${meta}` : `Bearer ${meta}, error="invalid_token", error_description="${problem.replace(/["\\]/g, "'")}"`
    return jsonReply(401, problem === null ? { error: 'unauthorized', error_description: 'send "Authorization: Bearer <token>"' } : { error: 'invalid_token', error_description: problem }, {
      'www-authenticate': www,
    })
  }

  type Streamable = Extract<McpSession, { kind: 'streamable' }>

  /** A session's server and transport, named `sid`; `opened` runs when the transport takes an initialize request. */
  const newStreamable = async (sid: string, subject: string, address: string, opened?: (s: Streamable) => Promise<void>, counted = true): Promise<Streamable> => {
    const server = newServer()
    const s: Streamable = {
      id: sid,
      kind: 'streamable',
      subject,
      address,
      transport: new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => sid, ...(opened ? { onsessioninitialized: () => opened(s) } : {}), keepAliveMs }),
      close: () => server.close(),
      lastUsed: Date.now(),
      busy: 0,
    }
    server.server.onclose = () => sessions.remove(sid)
    await server.connect(s.transport)
    if (counted && meter) countCalls(s.transport, meter)
    return s
  }

  /** Rebuilds session `id` of `subject` from the store, if it is there. @returns why not when there is no room for it */
  const rebuild = async (id: string, subject: string, address: string): Promise<string | null> => {
    const init = await stored!.find(id, subject)
    if (init === null) return null
    const refused = sessions.admit(subject, address)
    if (refused !== null) return refused
    // The replayed initialize is not a call of the client's: counted from after it.
    const s = await newStreamable(id, subject, address, undefined, false)
    try {
      await replayInitialize(s.transport, resource(), id, init)
    } catch (err) {
      await s.close()
      throw err
    }
    if (meter) countCalls(s.transport, meter)
    sessions.add(s)
    return null
  }

  /** Session `id` of `subject`, held here or rebuilt from the store; undefined: none (unknown, ended, someone else's); a string: no room. */
  const existing = async (id: string, subject: string, address: string): Promise<Streamable | undefined | string> => {
    if (sessions.get(id, subject, 'streamable') === undefined) {
      const key = `${id}\0${subject}`
      let pending = rebuilding.get(key)
      if (pending === undefined) {
        pending = rebuild(id, subject, address).finally(() => rebuilding.delete(key))
        rebuilding.set(key, pending)
      }
      const refused = await pending
      if (refused !== null) return refused
    }
    const s = sessions.get(id, subject, 'streamable')
    if (s !== undefined && !(await stored!.touch(id))) {
      await s.close() // ended at another node (or idle everywhere): ended here too
      return undefined
    }
    return s
  }

  /** Streamable HTTP: a POST without a session id starts one (if it is an initialize request). */
  const streamable = async (req: HttpRequest, grant: Grant): Promise<HttpReply> => {
    const id = req.header('mcp-session-id')
    let session: Streamable | undefined
    let body: string | undefined
    if (req.method === 'POST') {
      // Read here: its calls are counted before any runs, and an initialize request's params rebuild the session at another node.
      const read = await readBody(req, MAX_MESSAGE_BYTES)
      if (read === null) {
        grant.release()
        return rpcError(413, -32000, `a request may have at most ${MAX_MESSAGE_BYTES} bytes`)
      }
      body = read
    }
    // Its calls counted before anything of it runs (or a session is made for it).
    const work = body === undefined ? null : workOf(body)
    const taken = work === null ? () => {} : slots.take(grant.subject, work)
    if (typeof taken !== 'function') {
      grant.release()
      return rpcError(taken.status, taken.code, taken.message, taken.status === 429 ? { 'retry-after': '1' } : {})
    }
    const refuse = (reply: HttpReply): HttpReply => {
      taken()
      grant.release()
      return reply
    }
    if (id !== undefined) {
      const found = await existing(id, grant.subject, req.remoteAddress).catch((err: unknown) => {
        taken()
        throw err
      })
      if (typeof found === 'string') return refuse(rpcError(503, -32000, found, { 'retry-after': '30' }))
      session = found
    } else if (req.method === 'POST') {
      const refused = sessions.admit(grant.subject, req.remoteAddress)
      if (refused !== null) return refuse(rpcError(503, -32000, refused, { 'retry-after': '30' }))
      const init = initializeParams(body!)
      session = await newStreamable(newSessionId(), grant.subject, req.remoteAddress, async (s) => {
        if (init !== undefined) await stored!.save(s.id, s.subject, init)
        sessions.add(s)
      }).catch((err: unknown) => {
        taken()
        throw err
      })
    } else return refuse(rpcError(400, -32000, 'Bad Request: Mcp-Session-Id header is required'))
    if (session === undefined) return refuse(rpcError(404, -32001, 'Session not found'))
    // A GET is the server's own stream: it uses no file system and does not keep the session busy.
    if (req.method === 'GET') grant.release()
    else sessions.begin(session)
    const s = session
    const done = () => {
      if (req.method === 'GET') return
      taken()
      sessions.end(s)
      grant.release()
    }
    try {
      const res = await s.transport.handleRequest(toWebRequest(req, resource(), body), { authInfo: authInfoOf(grant) })
      if (id === undefined && s.transport.sessionId === undefined) void s.close() // it was not an initialize request: no session
      if (id !== undefined && req.method === 'DELETE' && res.ok) await stored!.remove(id) // ended at every node
      return { ...(await toHttpReply(res, req.signal)), finally: done }
    } catch (err) {
      done()
      throw err
    }
  }

  /** Legacy SSE: the stream that is the session. */
  const sse = async (req: HttpRequest, grant: Grant): Promise<HttpReply> => {
    grant.release() // the stream uses no file system; each POSTed message brings its own grant
    if (req.method !== 'GET') return jsonReply(405, { error: 'method_not_allowed', error_description: 'GET /sse opens the event stream; messages go to POST /messages' }, { allow: 'GET' })
    const refused = sessions.admit(grant.subject, req.remoteAddress)
    if (refused !== null) return jsonReply(503, { error: 'temporarily_unavailable', error_description: refused }, { 'retry-after': '30' })
    const sid = newSessionId()
    const server = newServer()
    const session: McpSession = {
      id: sid,
      kind: 'sse',
      subject: grant.subject,
      address: req.remoteAddress,
      transport: new SseTransport(sid, `/messages?sessionId=${sid}`, keepAliveMs),
      close: () => server.close(),
      lastUsed: Date.now(),
      busy: 0,
    }
    server.server.onclose = () => sessions.remove(sid)
    await server.connect(session.transport)
    if (meter) countCalls(session.transport, meter)
    sessions.add(session)
    return {
      status: 200,
      headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' },
      body: session.transport.stream(req.signal),
      finally: () => void server.close(),
    }
  }

  /** Legacy SSE: a message for a session's stream. */
  const messages = async (req: HttpRequest, grant: Grant): Promise<HttpReply> => {
    const refuse = (reply: HttpReply) => {
      grant.release()
      return reply
    }
    if (req.method !== 'POST') return refuse(jsonReply(405, { error: 'method_not_allowed', error_description: 'POST a JSON-RPC message to /messages?sessionId=<id>' }, { allow: 'POST' }))
    const session = sessions.get(req.query.get('sessionId') ?? '', grant.subject, 'sse')
    if (session === undefined) return refuse(jsonReply(404, { error: 'not_found', error_description: 'no such MCP session: open one with GET /sse' }))
    const type = (req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
    if (type !== 'application/json') return refuse(jsonReply(415, { error: 'unsupported_media_type', error_description: 'send the JSON-RPC message as application/json' }))
    const body = await readBody(req, MAX_MESSAGE_BYTES)
    if (body === null) return refuse(jsonReply(413, { error: 'too_large', error_description: `a message may have at most ${MAX_MESSAGE_BYTES} bytes` }))
    let parsed
    try {
      parsed = JSONRPCMessageSchema.safeParse(JSON.parse(body))
    } catch {
      parsed = null
    }
    if (!parsed?.success) return refuse(jsonReply(400, { error: 'invalid_request', error_description: 'the body is not a JSON-RPC message' }))
    const taken = slots.take(grant.subject, workOf(body)!)
    if (typeof taken !== 'function') return refuse(rpcError(taken.status, taken.code, taken.message, taken.status === 429 ? { 'retry-after': '1' } : {}))
    // The message's grant is held until it is answered: the session is busy until then.
    sessions.begin(session)
    let held = true
    const message: Grant = {
      ...grant,
      release: () => {
        if (!held) return
        held = false
        taken()
        grant.release()
        sessions.end(session)
      },
    }
    try {
      session.transport.deliver(parsed.data, message, { authInfo: authInfoOf(message) })
    } catch (err) {
      message.release()
      throw err
    }
    return { status: 202, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: 'Accepted' }
  }

  return {
    name: 'mcp',
    routes: { '/mcp': guarded(streamable), '/sse': guarded(sse), '/messages': guarded(messages) },
    async start(c) {
      ctx = c
      stored = new StoredSessions(c.state, opts.idleSeconds * 1000)
      meter = c.meter('mcp')
      // New requests are refused at once; tool calls under way get the grace to answer.
      drain = c.drain.register({ name: 'mcp', stopAccepting: () => (ctx = null), busy: () => calls.running, end: () => sessions.closeAll() })
    },
    async stop(graceMs = 0) {
      ctx = null
      await (drain ? drain.stop(graceMs) : sessions.closeAll())
      drain = null
    },
  }
}

async function readBody(req: HttpRequest, max: number): Promise<string | null> {
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of req.body) {
    size += chunk.byteLength
    if (size > max) return null
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

function jsonReply(status: number, value: unknown, headers: Record<string, string> = {}): HttpReply {
  return { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers }, body: JSON.stringify(value) }
}

function rpcError(status: number, code: number, message: string, headers: Record<string, string> = {}): HttpReply {
  return jsonReply(status, { jsonrpc: '2.0', error: { code, message }, id: null }, headers)
}
