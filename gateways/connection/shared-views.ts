/**
 * @module gateways/connection/shared-views
 * File system views (core/protocol-fs.ts) kept open per user for logins that come once
 * per request: S3 signs every request, and opening a view costs a round trip to a
 * worker, plus the login's look at the root. The first login of a user opens the view;
 * the next ones, while it is open, get a lease on it at no cost.
 *
 * A lease is a view of its own to its holder: closing it aborts the handles opened
 * through it, and only those, so one request ending never cuts another's transfer. A
 * view nobody holds is closed after `idleMs`; one whose opening failed is forgotten at
 * once (the next login tries again).
 */
import { FsError } from '../../core/errors.js'
import type { FileHandle, OpenFlags, OpenOptions, ProtocolFs } from '../../core/protocol-fs.js'
import type { RequestContext } from '../../core/storage.js'

interface Shared {
  readonly view: Promise<ProtocolFs>
  leases: number
  idleSince: number
}

export class SharedViews {
  readonly #idleMs: number
  readonly #views = new Map<string, Shared>()
  readonly #timer: NodeJS.Timeout

  constructor(opts: { readonly idleMs: number }) {
    this.#idleMs = opts.idleMs
    this.#timer = setInterval(() => this.#sweep(Date.now()), Math.max(1000, opts.idleMs / 2))
    this.#timer.unref()
  }

  /** A lease on the view of `key`, opened with `open` when there is none. Rejects as `open` does. */
  async lease(key: string, open: () => Promise<ProtocolFs>): Promise<ProtocolFs> {
    let s = this.#views.get(key)
    if (!s) {
      const view = open()
      const fresh: Shared = { view, leases: 0, idleSince: Date.now() }
      s = fresh
      this.#views.set(key, fresh)
      view.catch(() => {
        if (this.#views.get(key) === fresh) this.#views.delete(key)
      })
    }
    s.leases++
    const shared = s
    let view: ProtocolFs
    try {
      view = await shared.view
    } catch (err) {
      shared.leases--
      throw err
    }
    return new Lease(view, () => {
      shared.leases--
      shared.idleSince = Date.now()
    })
  }

  /** Views open now (held or idle), for tests. */
  get size(): number {
    return this.#views.size
  }

  /** Closes every view, held or not (the service stops). */
  close(): void {
    clearInterval(this.#timer)
    for (const s of this.#views.values()) void s.view.then((v) => v.close(), () => {})
    this.#views.clear()
  }

  #sweep(now: number): void {
    for (const [key, s] of this.#views) {
      if (s.leases > 0 || s.idleSince + this.#idleMs > now) continue
      this.#views.delete(key)
      void s.view.then((v) => v.close(), () => {})
    }
  }
}

/** One holder's use of a shared view. */
class Lease implements ProtocolFs {
  readonly permissions: ProtocolFs['permissions']
  readonly abilities: ProtocolFs['abilities']
  readonly identity: string
  readonly #view: ProtocolFs
  readonly #release: () => void
  readonly #handles = new Set<FileHandle>()
  #closed = false

  constructor(view: ProtocolFs, release: () => void) {
    this.#view = view
    this.#release = release
    this.permissions = view.permissions
    this.abilities = view.abilities
    this.identity = view.identity
  }

  stat: ProtocolFs['stat'] = (ctx, path) => this.#view.stat(ctx, path)
  lstat: ProtocolFs['lstat'] = (ctx, path) => this.#view.lstat(ctx, path)
  list: ProtocolFs['list'] = (ctx, dir, opts) => this.#view.list(ctx, dir, opts)
  mkdir: ProtocolFs['mkdir'] = (ctx, dir) => this.#view.mkdir(ctx, dir)
  rmdir: ProtocolFs['rmdir'] = (ctx, dir) => this.#view.rmdir(ctx, dir)
  unlink: ProtocolFs['unlink'] = (ctx, path) => this.#view.unlink(ctx, path)
  rename: ProtocolFs['rename'] = (ctx, from, to, opts) => this.#view.rename(ctx, from, to, opts)
  setTimes: ProtocolFs['setTimes'] = (ctx, path, times) => this.#view.setTimes(ctx, path, times)
  setMode: ProtocolFs['setMode'] = (ctx, path, mode) => this.#view.setMode(ctx, path, mode)
  truncate: ProtocolFs['truncate'] = (ctx, path, size) => this.#view.truncate(ctx, path, size)
  copy: ProtocolFs['copy'] = (ctx, from, to, opts) => this.#view.copy(ctx, from, to, opts)
  space: ProtocolFs['space'] = (ctx, path) => this.#view.space(ctx, path)
  metadata: ProtocolFs['metadata'] = (ctx, path) => this.#view.metadata(ctx, path)

  async open(ctx: RequestContext, path: string, flags: OpenFlags, opts?: OpenOptions): Promise<FileHandle> {
    if (this.#closed) throw new FsError('ECANCELED', 'the session is closed')
    const h = await this.#view.open(ctx, path, flags, opts)
    if (this.#closed) {
      h.abort()
      throw new FsError('ECANCELED', 'the session is closed')
    }
    this.#handles.add(h)
    return h
  }

  /** Aborts the handles opened through this lease (committed ones are not touched) and lets the view go. */
  close(): void {
    if (this.#closed) return
    this.#closed = true
    for (const h of this.#handles) h.abort()
    this.#handles.clear()
    this.#release()
  }
}
