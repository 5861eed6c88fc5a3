/**
 * @module gateways/connection/shared-views
 * File system views (core/view.ts) kept open per user for logins that come once
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
import type { FileHandle, OpenFlags, RequestContext, View } from '../../core/view.js'

interface Shared {
  readonly view: Promise<View>
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
  async lease(key: string, open: () => Promise<View>): Promise<View> {
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
    let view: View
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
class Lease implements View {
  readonly permissions: View['permissions']
  readonly abilities: View['abilities']
  readonly identity: string
  readonly #view: View
  readonly #release: () => void
  readonly #handles = new Set<FileHandle>()
  #closed = false

  constructor(view: View, release: () => void) {
    this.#view = view
    this.#release = release
    this.permissions = view.permissions
    this.abilities = view.abilities
    this.identity = view.identity
  }

  stat: View['stat'] = (ctx, path) => this.#view.stat(ctx, path)
  lstat: View['lstat'] = (ctx, path) => this.#view.lstat(ctx, path)
  list: View['list'] = (ctx, dir, opts) => this.#view.list(ctx, dir, opts)
  listAll: View['listAll'] = (ctx, dir) => this.#view.listAll(ctx, dir)
  readFile: View['readFile'] = (ctx, path, opts) => this.#view.readFile(ctx, path, opts)
  writeFile: View['writeFile'] = (ctx, path, body, opts) => this.#view.writeFile(ctx, path, body, opts)
  commitStaged: View['commitStaged'] = (ctx, path, source, opts) => this.#view.commitStaged(ctx, path, source, opts)
  checkWrite: View['checkWrite'] = (ctx, path, opts) => this.#view.checkWrite(ctx, path, opts)
  makeFolders: View['makeFolders'] = (ctx, dir) => this.#view.makeFolders(ctx, dir)
  removeTree: View['removeTree'] = (ctx, path) => this.#view.removeTree(ctx, path)
  move: View['move'] = (ctx, from, to, opts) => this.#view.move(ctx, from, to, opts)
  touch: View['touch'] = (ctx, path) => this.#view.touch(ctx, path)
  zip: View['zip'] = (ctx, paths, compression) => this.#view.zip(ctx, paths, compression)
  mkdir: View['mkdir'] = (ctx, dir) => this.#view.mkdir(ctx, dir)
  rmdir: View['rmdir'] = (ctx, dir) => this.#view.rmdir(ctx, dir)
  unlink: View['unlink'] = (ctx, path) => this.#view.unlink(ctx, path)
  rename: View['rename'] = (ctx, from, to, opts) => this.#view.rename(ctx, from, to, opts)
  setTimes: View['setTimes'] = (ctx, path, times) => this.#view.setTimes(ctx, path, times)
  setMode: View['setMode'] = (ctx, path, mode) => this.#view.setMode(ctx, path, mode)
  truncate: View['truncate'] = (ctx, path, size) => this.#view.truncate(ctx, path, size)
  copy: View['copy'] = (ctx, from, to, opts) => this.#view.copy(ctx, from, to, opts)
  space: View['space'] = (ctx, path) => this.#view.space(ctx, path)
  metadata: View['metadata'] = (ctx, path) => this.#view.metadata(ctx, path)

  async open(ctx: RequestContext, path: string, flags: OpenFlags): Promise<FileHandle> {
    if (this.#closed) throw new FsError('ECANCELED', 'the session is closed')
    const h = await this.#view.open(ctx, path, flags)
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
