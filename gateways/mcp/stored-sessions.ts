/**
 * @module gateways/mcp/stored-sessions
 * Streamable HTTP sessions in the state store, so that any node sharing it serves any
 * session (docs/mcp-gateway.md, "Several nodes"). What is kept is what rebuilds the
 * session's server: the client's `initialize` params, with a hash of the session id and
 * a hash of the login (subject) it is bound to; no credential. A node that gets a
 * session it does not hold rebuilds it (restore.ts); every request looks the session up,
 * and so finds out when it was ended elsewhere (DELETE, idle, evicted): then it is 404
 * at every node. Its use is written at most every tenth of the idle time (a minute at
 * most): a read per request, not a write.
 */
import { createHash } from 'node:crypto'
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js'
import type { McpSessionStore } from '../../core/state.js'

/** The params of a client's `initialize` request, as it sent them. */
export type InitializeParams = Record<string, unknown> & { readonly protocolVersion?: unknown }

/** Sessions idle at every node are purged from the store at most this often (by each node). */
const PURGE_EVERY_MS = 60_000

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')
const idHash = (id: string) => sha256(`filegate mcp session\0${id}`)
const ownerHash = (subject: string) => sha256(`filegate mcp owner\0${subject}`)

export class StoredSessions {
  readonly #state: McpSessionStore
  readonly #idleMs: number
  readonly #touchEveryMs: number
  #purged = 0

  constructor(state: McpSessionStore, idleMs: number) {
    this.#state = state
    this.#idleMs = idleMs
    this.#touchEveryMs = Math.min(idleMs / 10, 60_000)
  }

  /** Records a new session of `subject` (and purges the sessions idle everywhere, now and then). */
  async save(id: string, subject: string, init: InitializeParams): Promise<void> {
    const now = Date.now()
    if (now - this.#purged >= PURGE_EVERY_MS) {
      this.#purged = now
      await this.#state.purgeMcpSessions(now - this.#idleMs)
    }
    const asked = init.protocolVersion
    const protocol_version = typeof asked === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(asked) ? asked : LATEST_PROTOCOL_VERSION
    await this.#state.putMcpSession({ hash: idHash(id), owner: ownerHash(subject), protocol_version, init: JSON.stringify(init), created: now, last_seen: now })
  }

  /** The initialize params of session `id` when `subject` opened it and it is still live; null otherwise. */
  async find(id: string, subject: string): Promise<InitializeParams | null> {
    const r = await this.#state.getMcpSession(idHash(id))
    if (r === null || r.owner !== ownerHash(subject)) return null
    if (r.last_seen + this.#idleMs <= Date.now()) {
      await this.#state.deleteMcpSession(r.hash)
      return null
    }
    return JSON.parse(r.init) as InitializeParams
  }

  /** A use: records it when the last record of one is getting old. @returns false when the session was ended (at any node) */
  async touch(id: string): Promise<boolean> {
    const now = Date.now()
    const r = await this.#state.getMcpSession(idHash(id))
    if (r === null) return false
    return now - r.last_seen < this.#touchEveryMs || (await this.#state.touchMcpSession(r.hash, now))
  }

  /** Ends the session at every node. */
  async remove(id: string): Promise<void> {
    await this.#state.deleteMcpSession(idHash(id))
  }
}
