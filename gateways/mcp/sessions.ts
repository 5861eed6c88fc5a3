/**
 * @module gateways/mcp/sessions
 * The MCP sessions of the process, both transports: bound to the subject that opened
 * them (another credential's subject gets "not found", as for an unknown id), ended
 * by the client (DELETE, the SSE stream closed) or after `idleMs` without a message,
 * and bounded: `perSubject` each login, `perAddress` each client address (an IPv6 /64),
 * `max` in all. A newcomer is never refused while the table holds an idle session:
 * past a login's or an address's bound, that login's (address's) least recently used
 * idle session ends; with the table full, the biggest holder's does (the login or
 * address holding the most sessions), so one who opens sessions by the hundred, from
 * many tmp ids or many connections, loses its own and everyone else is still let in.
 * `evicted` is told of each session ended so: it ends at every node. The table holds
 * this node's sessions; Streamable HTTP ones are also in the state store
 * (stored-sessions.ts), and a node may drop its copy (idle here) while others serve it.
 */
import { randomBytes } from 'node:crypto'
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import type { SseTransport } from './sse-transport.js'
import { addressKey } from '../../core/networks.js'

export type McpSession =
  | (SessionBase & { readonly kind: 'streamable'; readonly transport: WebStandardStreamableHTTPServerTransport })
  | (SessionBase & { readonly kind: 'sse'; readonly transport: SseTransport })

interface SessionBase {
  readonly id: string
  readonly subject: string
  /** The client's address that opened it (as `addressKey` counts it). */
  readonly address: string
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
  readonly perAddress: number
}

/** 256 random bits, URL-safe: what names a session and, with its subject, lets it be used. */
export const newSessionId = (): string => randomBytes(32).toString('base64url')

export class SessionTable {
  readonly #byId = new Map<string, McpSession>()
  readonly #limits: SessionLimits
  readonly #timer: NodeJS.Timeout
  readonly #evicted: (s: McpSession) => void
  readonly #opened: () => () => void
  /** Each session's end for `opened`'s count (the metrics' sessions gauge). */
  readonly #counted = new Map<string, () => void>()

  /** @param opened called as a session enters the table; what it returns, as it leaves */
  constructor(limits: SessionLimits, evicted: (s: McpSession) => void = () => {}, opened: () => () => void = () => () => {}) {
    this.#limits = limits
    this.#evicted = evicted
    this.#opened = opened
    this.#timer = setInterval(() => this.sweep(Date.now()), Math.max(100, Math.min(limits.idleMs / 2, 30_000)))
    this.#timer.unref()
  }

  get size(): number {
    return this.#byId.size
  }

  /**
   * Room for one more session of `subject` from `address`? null: yes; else why not.
   * Makes room: in the subject's own sessions, the address's own, then the biggest holder's.
   */
  admit(subject: string, address: string): string | null {
    const at = addressKey(address)
    const own = [...this.#byId.values()].filter((s) => s.subject === subject)
    if (own.length >= this.#limits.perSubject && !this.#endOldestIdle(own)) return `this login has ${own.length} MCP sessions busy: end some first`
    const here = [...this.#byId.values()].filter((s) => addressKey(s.address) === at)
    if (here.length >= this.#limits.perAddress && !this.#endOldestIdle(here)) return `this address has ${here.length} MCP sessions busy: end some first`
    if (this.#byId.size >= this.#limits.max && !this.#endBiggestHoldersIdle()) return `the server has its maximum of ${this.#limits.max} MCP sessions open, all busy: try again later`
    return null
  }

  /** Ends the least recently used idle session of `group`. @returns false when all are busy */
  #endOldestIdle(group: readonly McpSession[]): boolean {
    let oldest: McpSession | undefined
    for (const s of group) if (s.busy === 0 && (oldest === undefined || s.lastUsed < oldest.lastUsed)) oldest = s
    if (oldest === undefined) return false
    this.#evicted(oldest)
    void this.#end(oldest)
    return true
  }

  /**
   * Ends an idle session of whoever holds the most: logins and addresses alike, the largest
   * group first (ties: the one whose idle session was used least recently).
   */
  #endBiggestHoldersIdle(): boolean {
    const groups = new Map<string, McpSession[]>()
    for (const s of this.#byId.values()) {
      for (const k of [`s\0${s.subject}`, `a\0${addressKey(s.address)}`]) {
        let g = groups.get(k)
        if (!g) groups.set(k, (g = []))
        g.push(s)
      }
    }
    const oldestIdle = (g: readonly McpSession[]) => Math.min(...g.filter((s) => s.busy === 0).map((s) => s.lastUsed))
    const ranked = [...groups.values()].sort((a, b) => b.length - a.length || oldestIdle(a) - oldestIdle(b))
    for (const g of ranked) if (this.#endOldestIdle(g)) return true
    return false
  }

  add(s: McpSession): void {
    if (!this.#counted.has(s.id)) this.#counted.set(s.id, this.#opened())
    this.#byId.set(s.id, s)
  }

  #uncount(id: string): void {
    this.#counted.get(id)?.()
    this.#counted.delete(id)
  }

  /** The session `id` when `subject` opened it; undefined otherwise (unknown, ended, someone else's). */
  get<K extends McpSession['kind']>(id: string, subject: string, kind: K): Extract<McpSession, { kind: K }> | undefined {
    const s = this.#byId.get(id)
    return s !== undefined && s.subject === subject && s.kind === kind ? (s as Extract<McpSession, { kind: K }>) : undefined
  }

  remove(id: string): void {
    this.#byId.delete(id)
    this.#uncount(id)
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
    this.#uncount(s.id)
    return s.close().catch(() => {})
  }
}
