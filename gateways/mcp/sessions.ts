/**
 * @module gateways/mcp/sessions
 * The MCP sessions of the process, both transports: bound to the subject that opened
 * them (another credential's subject gets "not found", as for an unknown id), ended
 * by the client (DELETE, the SSE stream closed) or after `idleMs` without a message,
 * and bounded: `max` in all, `perSubject` each (a subject over it loses its least
 * recently used session, which `evicted` is told of: it ends at every node). The
 * table holds this node's sessions; Streamable HTTP ones are also in the state store
 * (stored-sessions.ts), and a node may drop its copy (idle here) while others serve it.
 */
import { randomBytes } from 'node:crypto'
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import type { SseTransport } from './sse-transport.js'

export type McpSession =
  | (SessionBase & { readonly kind: 'streamable'; readonly transport: WebStandardStreamableHTTPServerTransport })
  | (SessionBase & { readonly kind: 'sse'; readonly transport: SseTransport })

interface SessionBase {
  readonly id: string
  readonly subject: string
  /** Ends the session (its server and transport); the table forgets it through `remove`. */
  readonly close: () => Promise<void>
  lastUsed: number
  /** Requests in flight. */
  busy: number
}

export interface SessionLimits {
  readonly idleMs: number
  readonly max: number
  readonly perSubject: number
}

/** 256 random bits, URL-safe: what names a session and, with its subject, lets it be used. */
export const newSessionId = (): string => randomBytes(32).toString('base64url')

export class SessionTable {
  readonly #byId = new Map<string, McpSession>()
  readonly #limits: SessionLimits
  readonly #timer: NodeJS.Timeout
  readonly #evicted: (s: McpSession) => void

  constructor(limits: SessionLimits, evicted: (s: McpSession) => void = () => {}) {
    this.#limits = limits
    this.#evicted = evicted
    this.#timer = setInterval(() => this.sweep(Date.now()), Math.max(100, Math.min(limits.idleMs / 2, 30_000)))
    this.#timer.unref()
  }

  get size(): number {
    return this.#byId.size
  }

  /** Room for one more session of `subject`? null: yes; else why not. Makes room in the subject's own sessions. */
  admit(subject: string): string | null {
    const own = [...this.#byId.values()].filter((s) => s.subject === subject)
    if (own.length >= this.#limits.perSubject) {
      const idle = own.filter((s) => s.busy === 0).sort((a, b) => a.lastUsed - b.lastUsed)[0]
      if (idle === undefined) return `this login has ${own.length} MCP sessions busy: end some first`
      this.#evicted(idle)
      this.#end(idle)
    }
    if (this.#byId.size >= this.#limits.max) return `the server has its maximum of ${this.#limits.max} MCP sessions open: try again later`
    return null
  }

  add(s: McpSession): void {
    this.#byId.set(s.id, s)
  }

  /** The session `id` when `subject` opened it; undefined otherwise (unknown, ended, someone else's). */
  get<K extends McpSession['kind']>(id: string, subject: string, kind: K): Extract<McpSession, { kind: K }> | undefined {
    const s = this.#byId.get(id)
    return s !== undefined && s.subject === subject && s.kind === kind ? (s as Extract<McpSession, { kind: K }>) : undefined
  }

  remove(id: string): void {
    this.#byId.delete(id)
  }

  begin(s: McpSession): void {
    s.busy++
    s.lastUsed = Date.now()
  }

  end(s: McpSession): void {
    s.busy--
    s.lastUsed = Date.now()
  }

  sweep(now: number): void {
    for (const s of this.#byId.values()) if (s.busy === 0 && now - s.lastUsed >= this.#limits.idleMs) this.#end(s)
  }

  async closeAll(): Promise<void> {
    clearInterval(this.#timer)
    await Promise.all([...this.#byId.values()].map((s) => this.#end(s)))
  }

  #end(s: McpSession): Promise<void> {
    this.#byId.delete(s.id)
    return s.close().catch(() => {})
  }
}
