/**
 * @module gateways/mcp/legacy-sse
 * The legacy HTTP+SSE transport's two routes (./sse-transport.ts is the transport):
 * `GET /sse` opens the event stream that is the session, and `POST /messages?sessionId=`
 * delivers one JSON-RPC message to it, answered on the stream. The session lives on the
 * node that holds its stream.
 */
import { type JSONRPCMessage, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js'
import type { HttpReply, HttpRequest } from '../../core/http.js'
import { workOf } from './call-slots.js'
import { type McpDoor, serveSession } from './door.js'
import { type Grant, authInfoOf } from './grant.js'
import { MAX_MESSAGE_BYTES, jsonReply, readBody, slotsRefusal } from './replies.js'
import { type McpSession, newSessionId } from './sessions.js'
import { SseTransport } from './sse-transport.js'

/** `GET /sse`: the stream that is the session. */
export async function openSseStream(door: McpDoor, req: HttpRequest, grant: Grant): Promise<HttpReply> {
  grant.release() // the stream uses no file system; each POSTed message brings its own grant
  if (req.method !== 'GET') return jsonReply(405, { error: 'method_not_allowed', error_description: 'GET /sse opens the event stream; messages go to POST /messages' }, { allow: 'GET' })
  const refused = door.sessions.admit(grant.subject, req.remoteAddress)
  if (refused !== null) return jsonReply(503, { error: 'temporarily_unavailable', error_description: refused }, { 'retry-after': '30' })
  const sid = newSessionId()
  const server = door.newServer()
  const session: McpSession = {
    id: sid,
    kind: 'sse',
    subject: grant.subject,
    address: req.remoteAddress,
    transport: new SseTransport(sid, `/messages?sessionId=${sid}`, door.keepAliveMs),
    close: () => server.close(),
    lastUsed: Date.now(),
    busy: 0,
  }
  await serveSession(door, server, session)
  door.sessions.add(session)
  return {
    status: 200,
    headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' },
    body: session.transport.stream(req.signal),
    finally: () => void server.close(),
  }
}

/** `POST /messages?sessionId=<id>`: a message for a session's stream, accepted (202) once it is delivered. */
export async function postSseMessage(door: McpDoor, req: HttpRequest, grant: Grant): Promise<HttpReply> {
  const refuse = (reply: HttpReply) => {
    grant.release()
    return reply
  }
  if (req.method !== 'POST') return refuse(jsonReply(405, { error: 'method_not_allowed', error_description: 'POST a JSON-RPC message to /messages?sessionId=<id>' }, { allow: 'POST' }))
  const session = door.sessions.get(req.query.get('sessionId') ?? '', grant.subject, 'sse')
  if (session === undefined) return refuse(jsonReply(404, { error: 'not_found', error_description: 'no such MCP session: open one with GET /sse' }))
  const type = (req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
  if (type !== 'application/json') return refuse(jsonReply(415, { error: 'unsupported_media_type', error_description: 'send the JSON-RPC message as application/json' }))
  const body = await readBody(req, MAX_MESSAGE_BYTES)
  if (body === null) return refuse(jsonReply(413, { error: 'too_large', error_description: `a message may have at most ${MAX_MESSAGE_BYTES} bytes` }))
  const parsed = parseMessage(body)
  if (parsed === null) return refuse(jsonReply(400, { error: 'invalid_request', error_description: 'the body is not a JSON-RPC message' }))
  const taken = door.slots.take(grant.subject, workOf(body)!)
  if (typeof taken !== 'function') return refuse(slotsRefusal(taken))
  // The message's grant is held until it is answered: the session is busy until then.
  door.sessions.begin(session)
  let held = true
  const message: Grant = {
    ...grant,
    release: () => {
      if (!held) return
      held = false
      taken()
      grant.release()
      door.sessions.end(session)
    },
  }
  try {
    session.transport.deliver(parsed, message, { authInfo: authInfoOf(message) })
  } catch (err) {
    message.release()
    throw err
  }
  return { status: 202, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: 'Accepted' }
}

/** The JSON-RPC message a body holds; null: not JSON, or not a JSON-RPC message. */
function parseMessage(body: string): JSONRPCMessage | null {
  try {
    const parsed = JSONRPCMessageSchema.safeParse(JSON.parse(body))
    return parsed.success ? parsed.data : null
  } catch {
    return null
  }
}
