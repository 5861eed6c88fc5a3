/**
 * @module gateways/mcp/streamable
 * Streamable HTTP (protocol 2025-11-25) at `/mcp`: POST, GET, DELETE, sessions by
 * `Mcp-Session-Id`, through the SDK's web-standard transport (./web.ts). A POST's calls
 * take the login's call slots before any of them runs. A session is kept in the state
 * store too (./stored-sessions.ts), so a node that does not hold it rebuilds it from
 * there (./restore.ts), and a session ended at one node is ended at every node.
 */
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import type { HttpReply, HttpRequest } from '../../core/http.js'
import { workOf } from './call-slots.js'
import { type McpDoor, countOn, serveSession } from './door.js'
import { type Grant, authInfoOf } from './grant.js'
import { MAX_MESSAGE_BYTES, readBody, rpcError, slotsRefusal } from './replies.js'
import { initializeParams, replayInitialize } from './restore.js'
import { type McpSession, newSessionId } from './sessions.js'
import { toHttpReply, toWebRequest } from './web.js'

type Streamable = Extract<McpSession, { kind: 'streamable' }>

/** A request's body (a POST's) and the call slots its calls took. */
interface Calls {
  readonly body: string | undefined
  /** Gives the slots back (once the request is answered). */
  readonly taken: () => void
}

export class StreamableHttp {
  readonly #door: McpDoor
  /** Sessions being rebuilt from the store here, by id and subject: one rebuild each. */
  readonly #rebuilding = new Map<string, Promise<string | null>>()

  constructor(door: McpDoor) {
    this.#door = door
  }

  /** A request to `/mcp`: a POST without a session id starts a session (if it is an initialize request). */
  async handle(req: HttpRequest, grant: Grant): Promise<HttpReply> {
    const id = req.header('mcp-session-id')
    const calls = await this.#calls(req, grant)
    if (!('taken' in calls)) return calls
    const found = await this.#session(req, id, grant.subject, calls.body).catch((err: unknown) => {
      calls.taken()
      throw err
    })
    if ('status' in found) {
      calls.taken()
      grant.release()
      return found
    }
    return this.#serve(req, id, grant, found, calls)
  }

  /**
   * A POST's body, read here: its calls are counted before any runs (or a session is made
   * for it), and an initialize request's params rebuild the session at another node.
   * @returns the reply when the request is refused (its grant released)
   */
  async #calls(req: HttpRequest, grant: Grant): Promise<Calls | HttpReply> {
    let body: string | undefined
    if (req.method === 'POST') {
      const read = await readBody(req, MAX_MESSAGE_BYTES)
      if (read === null) {
        grant.release()
        return rpcError(413, -32000, `a request may have at most ${MAX_MESSAGE_BYTES} bytes`)
      }
      body = read
    }
    const work = body === undefined ? null : workOf(body)
    const taken = work === null ? () => {} : this.#door.slots.take(grant.subject, work)
    if (typeof taken !== 'function') {
      grant.release()
      return slotsRefusal(taken)
    }
    return { body, taken }
  }

  /** Session `id`, or a new one for a POST without an id; the refusal when there is none to serve the request. */
  async #session(req: HttpRequest, id: string | undefined, subject: string, body: string | undefined): Promise<Streamable | HttpReply> {
    if (id !== undefined) {
      const found = await this.#existing(id, subject, req.remoteAddress)
      if (typeof found === 'string') return rpcError(503, -32000, found, { 'retry-after': '30' })
      return found ?? rpcError(404, -32001, 'Session not found')
    }
    if (req.method !== 'POST' || body === undefined) return rpcError(400, -32000, 'Bad Request: Mcp-Session-Id header is required')
    const refused = this.#door.sessions.admit(subject, req.remoteAddress)
    if (refused !== null) return rpcError(503, -32000, refused, { 'retry-after': '30' })
    const init = initializeParams(body)
    return this.#open(newSessionId(), subject, req.remoteAddress, async (s) => {
      if (init !== undefined) await this.#door.stored().save(s.id, s.subject, init)
      this.#door.sessions.add(s)
    })
  }

  /** Hands the request to the session's transport; the session is busy, the grant and the slots held, until it is answered. */
  async #serve(req: HttpRequest, id: string | undefined, grant: Grant, s: Streamable, calls: Calls): Promise<HttpReply> {
    const { sessions } = this.#door
    // A GET is the server's own stream: it uses no file system and does not keep the session busy.
    if (req.method === 'GET') grant.release()
    else sessions.begin(s)
    const done = () => {
      if (req.method === 'GET') return
      calls.taken()
      sessions.end(s)
      grant.release()
    }
    try {
      const res = await s.transport.handleRequest(toWebRequest(req, this.#door.resource(), calls.body), { authInfo: authInfoOf(grant) })
      if (id === undefined && s.transport.sessionId === undefined) void s.close() // it was not an initialize request: no session
      if (id !== undefined && req.method === 'DELETE' && res.ok) await this.#door.stored().remove(id) // ended at every node
      return { ...(await toHttpReply(res, req.signal)), finally: done }
    } catch (err) {
      done()
      throw err
    }
  }

  /** A session's server and transport, named `sid`; `opened` runs when the transport takes an initialize request. */
  async #open(sid: string, subject: string, address: string, opened?: (s: Streamable) => Promise<void>, counted = true): Promise<Streamable> {
    const server = this.#door.newServer()
    const s: Streamable = {
      id: sid,
      kind: 'streamable',
      subject,
      address,
      transport: new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => sid, ...(opened ? { onsessioninitialized: () => opened(s) } : {}), keepAliveMs: this.#door.keepAliveMs }),
      close: () => server.close(),
      lastUsed: Date.now(),
      busy: 0,
    }
    await serveSession(this.#door, server, s, counted)
    return s
  }

  /** Session `id` of `subject`, held here or rebuilt from the store; undefined: none (unknown, ended, someone else's); a string: no room. */
  async #existing(id: string, subject: string, address: string): Promise<Streamable | undefined | string> {
    const { sessions } = this.#door
    if (sessions.get(id, subject, 'streamable') === undefined) {
      const key = `${id}\0${subject}`
      let pending = this.#rebuilding.get(key)
      if (pending === undefined) {
        pending = this.#rebuild(id, subject, address).finally(() => this.#rebuilding.delete(key))
        this.#rebuilding.set(key, pending)
      }
      const refused = await pending
      if (refused !== null) return refused
    }
    const s = sessions.get(id, subject, 'streamable')
    if (s !== undefined && !(await this.#door.stored().touch(id))) {
      await s.close() // ended at another node (or idle everywhere): ended here too
      return undefined
    }
    return s
  }

  /** Rebuilds session `id` of `subject` from the store, if it is there. @returns why not when there is no room for it */
  async #rebuild(id: string, subject: string, address: string): Promise<string | null> {
    const init = await this.#door.stored().find(id, subject)
    if (init === null) return null
    const refused = this.#door.sessions.admit(subject, address)
    if (refused !== null) return refused
    // The replayed initialize is not a call of the client's: counted from after it.
    const s = await this.#open(id, subject, address, undefined, false)
    try {
      await replayInitialize(s.transport, this.#door.resource(), id, init)
    } catch (err) {
      await s.close()
      throw err
    }
    countOn(this.#door, s)
    this.#door.sessions.add(s)
    return null
  }
}
