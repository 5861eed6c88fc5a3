/**
 * @module gateways/connection/list-pages
 * Directory listings in pages, for protocols that page (SFTP READDIR, S3 ListObjects).
 *
 * Order: UTF-8 byte order of the names (`Buffer.compare`), what S3 requires and what any
 * SFTP client accepts; the same for every backend.
 *
 * Cost: a page costs at most one backend listing. The first page lists the directory
 * through the pool and keeps the sorted result as a snapshot, under a random id that the
 * cursor carries with the last name returned; later pages slice the snapshot. Snapshots
 * are bounded: they expire after `ttlMs` (30 s); one login's snapshots together hold at
 * most `perLoginEntries` (its oldest are dropped first; a listing larger than that is not
 * kept at all); and once all snapshots together hold more than `maxEntries`, the login
 * holding the most loses its oldest. So one login listing huge folders over and over
 * costs its own snapshots, never another login's: the others' pages keep slicing theirs
 * instead of listing and sorting their folders again. A cursor whose snapshot is gone
 * lists again and goes on after its last name, so a client paging slowly through a
 * directory that changes meanwhile sees every name that stayed, once, in order.
 */
import { randomBytes } from 'node:crypto'
import { FsError } from '../../core/errors.js'
import type { FsEntry, ListPage } from '../../core/view.js'

export const DEFAULT_PAGE = 1000
const MAX_PAGE = 100_000

interface Snapshot {
  readonly owner: object
  readonly login: string
  readonly dir: string
  readonly entries: readonly FsEntry[]
  readonly keys: readonly Buffer[]
  readonly at: number
}

interface Cursor {
  readonly id: string
  readonly after: string
}

export interface SnapshotLimits {
  readonly ttlMs?: number
  /** All snapshots together (default 1,000,000 entries). */
  readonly maxEntries?: number
  /** One login's snapshots together (default 250,000 entries). */
  readonly perLoginEntries?: number
}

/** One login's snapshots, oldest first, and their entries. */
interface LoginShare {
  readonly ids: Set<string>
  entries: number
}

/** Listing snapshots, shared by the views of a process (each snapshot is bound to its view). */
export class ListSnapshots {
  readonly #ttlMs: number
  readonly #maxEntries: number
  readonly #perLogin: number
  /** In insertion order: the oldest first. */
  readonly #byId = new Map<string, Snapshot>()
  readonly #logins = new Map<string, LoginShare>()
  /** The snapshot kept last for a view's directory, for pages asked `after` a name. */
  readonly #latest = new WeakMap<object, Map<string, string>>()
  #entries = 0

  constructor(limits: SnapshotLimits = {}) {
    this.#ttlMs = limits.ttlMs ?? 30_000
    this.#maxEntries = limits.maxEntries ?? 1_000_000
    this.#perLogin = Math.min(limits.perLoginEntries ?? 250_000, this.#maxEntries)
  }

  /** Entries held, all snapshots together (for tests and figures). */
  get entries(): number {
    return this.#entries
  }

  /** Entries held by one login's snapshots (for tests and figures). */
  entriesOf(login: string): number {
    return this.#logins.get(login)?.entries ?? 0
  }

  /**
   * One page of `dir` for the view `owner`, of the login `login` (whose share of the
   * snapshots it counts against). `listAll` lists the directory through the pool (called
   * once at most).
   */
  async page(
    owner: object,
    dir: string,
    opts: { cursor?: string | null; after?: string; limit?: number },
    listAll: () => Promise<readonly FsEntry[]>,
    login = '',
  ): Promise<ListPage> {
    const limit = opts.limit ?? DEFAULT_PAGE
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE) throw new FsError('EINVAL', `a page holds 1 to ${MAX_PAGE} entries`, { path: dir })
    this.#expire()
    const cursor = opts.cursor ? decodeCursor(opts.cursor) : opts.after !== undefined ? { id: this.#latest.get(owner)?.get(dir) ?? '', after: opts.after } : null
    let snap = cursor ? this.#byId.get(cursor.id) : undefined
    // A snapshot serves its own view, or another view of the same login (the same storage and root: the same listing).
    if (snap && (snap.dir !== dir || (snap.owner !== owner && (login === '' || snap.login !== login)))) snap = undefined
    let id = cursor?.id
    if (!snap) {
      snap = sorted(owner, login, dir, await listAll())
      id = randomBytes(12).toString('base64url')
    }
    let start = 0
    if (cursor) {
      const after = Buffer.from(cursor.after, 'utf8')
      start = firstAfter(snap.keys, after)
    }
    const end = Math.min(start + limit, snap.entries.length)
    const entries = snap.entries.slice(start, end)
    if (end >= snap.entries.length) {
      this.#drop(id!)
      return { entries, cursor: null }
    }
    if (!this.#byId.has(id!)) this.#keep(id!, snap)
    return { entries, cursor: encodeCursor({ id: id!, after: entries[entries.length - 1]!.name }) }
  }

  #keep(id: string, snap: Snapshot): void {
    // Larger than a login's share: not kept (its next page lists again, at that login's cost only).
    if (snap.entries.length > this.#perLogin) return
    // The login makes room in its own share first, its oldest snapshots first.
    const held = this.#logins.get(snap.login)
    if (held) {
      for (const oldId of held.ids) {
        if (held.entries + snap.entries.length <= this.#perLogin) break
        this.#drop(oldId)
      }
    }
    let share = this.#logins.get(snap.login)
    if (!share) this.#logins.set(snap.login, (share = { ids: new Set(), entries: 0 }))
    this.#byId.set(id, snap)
    share.ids.add(id)
    share.entries += snap.entries.length
    let dirs = this.#latest.get(snap.owner)
    if (!dirs) this.#latest.set(snap.owner, (dirs = new Map()))
    dirs.set(snap.dir, id)
    this.#entries += snap.entries.length
    // Then, over the total, whoever holds the most gives up its oldest.
    while (this.#entries > this.#maxEntries) {
      let biggest: LoginShare | undefined
      for (const s of this.#logins.values()) if (biggest === undefined || s.entries > biggest.entries) biggest = s
      const oldest = [...biggest!.ids].find((x) => x !== id)
      if (oldest === undefined) break
      this.#drop(oldest)
    }
  }

  #drop(id: string, snap = this.#byId.get(id)): void {
    if (!snap || !this.#byId.delete(id)) return
    const dirs = this.#latest.get(snap.owner)
    if (dirs?.get(snap.dir) === id) dirs.delete(snap.dir)
    this.#entries -= snap.entries.length
    const share = this.#logins.get(snap.login)
    if (share?.ids.delete(id)) {
      share.entries -= snap.entries.length
      if (share.ids.size === 0) this.#logins.delete(snap.login)
    }
  }

  #expire(): void {
    const now = Date.now()
    for (const [id, snap] of this.#byId) {
      if (now - snap.at < this.#ttlMs) break
      this.#drop(id, snap)
    }
  }
}

function sorted(owner: object, login: string, dir: string, all: readonly FsEntry[]): Snapshot {
  const keyed = all.map((e) => ({ e, k: Buffer.from(e.name, 'utf8') }))
  keyed.sort((a, b) => Buffer.compare(a.k, b.k))
  return { owner, login, dir, entries: keyed.map((x) => x.e), keys: keyed.map((x) => x.k), at: Date.now() }
}

/** Index of the first key greater than `after` (binary search). */
function firstAfter(keys: readonly Buffer[], after: Buffer): number {
  let lo = 0
  let hi = keys.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (Buffer.compare(keys[mid]!, after) <= 0) lo = mid + 1
    else hi = mid
  }
  return lo
}

function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify([c.id, c.after]), 'utf8').toString('base64url')
}

function decodeCursor(s: string): Cursor {
  try {
    const v: unknown = JSON.parse(Buffer.from(s, 'base64url').toString('utf8'))
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string') return { id: v[0], after: v[1] }
  } catch {
    // fall through
  }
  throw new FsError('EINVAL', 'this listing cursor is not valid')
}
