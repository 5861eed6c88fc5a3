/**
 * @module gateways/connection/view
 * The view every door calls (core/view.ts), built over the worker pool: `openView` gives
 * one login's view of one backend, from one folder, with the login's rights. The folder
 * is the backend spec's root (a gateway login builds a spec rooted at the user's folder,
 * a share of a local folder one rooted at the share), so the drivers' containment (the
 * local driver's symlink-safe pins) holds there; a share of a folder of any other
 * storage is shown from that folder by the view itself (`root`), its errors rewritten so
 * they never show the path above it.
 *
 * Parts, each in gateways/connection/: list-pages.ts (listings in pages with cursors),
 * file-handle.ts (an open file: a proxy on its actor's port; the file itself, with its
 * read-ahead, coalescing, in-place writes and staging copy, lives in the worker that owns
 * the backend, workers/handles/), errors.ts (every failure an FsError), transfer-limits.ts
 * (the fairness limits the view counts its transfers against); the view's cap on
 * bytes waiting to cross to the actors is core/pending-budget.ts. docs/gateways.md, "The gateway layer", says what
 * a view guarantees.
 */
import { MessageChannel } from 'node:worker_threads'
import { createHash } from 'node:crypto'
import { type BackendSpec, backendIdentity, backendKey } from '../../core/backend.js'
import type { Entry, ObjectMetadata, Space, StoredMetadata } from '../../core/driver.js'
import { FsError, isFsError } from '../../core/errors.js'
import { isCanonical, parentOf } from '../../core/paths.js'
import type { BackendAbilities, HandleOpen, HandleOpened, RangeSpec, ReadHead, ToHandle, TransformRequest, ZipCompression, ZipHead } from '../../core/messages.js'
import { PendingBudget } from '../../core/pending-budget.js'
import { type PermissionName, type Permissions, mayReplace, refusal } from '../../core/permissions.js'
import type { ClientIdentity, FileHandle, FsAbilities, FsEntry, HeadedStream, ListPage, OpenFlags, RequestContext, View, WriteFileOptions, WrittenFile } from '../../core/view.js'
import type { StagingQuota } from '../../core/staging-quota.js'
import type { StagedSource } from '../../core/staged.js'
import { Channel, INLINE_READ_MAX } from '../../workers/client.js'
import type { WorkerPool } from '../../workers/pool.js'
import { asFsError, fsCall } from './errors.js'
import { type HandleActor, ProxyHandle } from './file-handle.js'
import { toFsEntry } from '../../core/view-parts.js'
import { ListSnapshots } from './list-pages.js'

export { sweepStaging } from './staging-sweep.js'
export { ListSnapshots } from './list-pages.js'

export interface ViewLimits {
  /** Coalesced chunk size before bytes cross to a worker (default 1 MiB). */
  readonly chunkBytes?: number
  /** Per handle: bytes held out of order, or waiting to cross, before writes wait (default 64 MiB). */
  readonly windowBytes?: number
  /** Per view: bytes waiting to cross, all handles together, before writes wait (default 128 MiB). */
  readonly pendingBytes?: number
  /** A read-ahead stream not read for this long is dropped (default 2000 ms). */
  readonly idleMs?: number
}

export interface OpenViewOptions {
  readonly pool: WorkerPool
  /** The login's backend; the view shows it from `root` (default: the spec's own root). */
  readonly spec: BackendSpec
  /** backendKey(spec), when the caller has it. */
  readonly key?: string
  /**
   * The folder of the backend the view shows as `/` (canonical; default `/`): a share's
   * folder on a storage whose spec cannot be rooted there. Nothing above it can be named,
   * and errors never show it.
   */
  readonly root?: string
  /** A file share's one name (in `root`): `/` lists that file alone; any other path is ENOENT, or EACCES for a change. */
  readonly only?: string | null
  /** What the login may do: each operation is checked against these bits before it reaches a worker (core/view.ts). */
  readonly permissions: Permissions
  /**
   * true (default): opening asks a worker what the backend can do, which also checks that
   * it can be reached (a gateway's login). false: what an earlier view of the same backend
   * found is used, with no task (a view per HTTP request).
   */
  readonly probe?: boolean
  /** Private staging files (`<data_dir>/gateway-staging`); `sweepStaging` it once at start-up. */
  readonly stagingDir: string
  /** The bounds on staged bytes (core/staging-quota.ts); the staging copies count against the client's login. */
  readonly stagingQuota?: StagingQuota
  /**
   * Who uses the view, for the fairness limits on concurrent transfers when a request
   * does not say (`RequestContext.client` names the request's own client first).
   */
  readonly client?: ClientIdentity
  /**
   * The fairness limits on concurrent transfers (gateways/connection/transfer-limits.ts),
   * one count for every door: a stream read of a file larger than a task's inline answer,
   * a `writeFile`, a `zip`, and a handle that moves a file's bytes (from its open to its
   * end) each count as one transfer; past a limit it is refused (EBUSY, saying which limit).
   */
  readonly transfers?: { acquire(client: ClientIdentity): () => void }
  /** Listing snapshots, shared by the views of a process (default: one per process). */
  readonly snapshots?: ListSnapshots
  /** Whose share of the snapshots this view's pages count against (default: its identity, the storage and folder it shows). */
  readonly login?: string
  readonly limits?: ViewLimits
  /** Write in place where the backend can (default); false: staging for every write that is not a `put`. */
  readonly inPlace?: boolean
}

/** The process's listing snapshots: every view's, whatever door pages with them. */
const listSnapshots = new ListSnapshots()
/** Names being created exclusively, by view identity and path (`#reserve`). */
const creating = new Set<string>()
/** What each backend can do, by backend key, as the last view that asked found it (`probe`). */
const knownAbilities = new Map<string, BackendAbilities>()
const KNOWN_ABILITIES_MAX = 10_000
/** Pause before a task the pool failed with EIO is sent again. */
const RETRY_MS = 250

/** A view's figures, for tests and metrics. */
export interface ViewStats {
  readonly openHandles: number
  /** Read-ahead streams started (each seek that restarts one counts). */
  readonly readStreams: number
  /** Read-ahead streams open now. */
  readonly liveReadStreams: number
  /** Coalesced chunks the handles' actors gave their drivers (as the actors last told). */
  readonly uploadChunks: number
  /** Written bytes not yet taken by the handles' actors. */
  readonly pendingBytes: number
}

export type GatewayView = View & { readonly stats: ViewStats }

/**
 * Opens a view: one task asks a worker what the backend can do (unless `probe` is false
 * and that is known). The worker makes the backend's driver if it has none for this
 * spec, which for a remote backend connects and logs in: a wrong pass-through password
 * fails here (EAUTH), an unreachable server too (EUNAVAILABLE, ETIMEDOUT).
 */
export async function openView(opts: OpenViewOptions): Promise<GatewayView> {
  const key = opts.key ?? backendKey(opts.spec)
  const ch = new Channel(opts.pool, opts.spec, key)
  let abilities = opts.probe === false ? knownAbilities.get(key) : undefined
  if (!abilities) {
    abilities = await fsCall(() => ch.call({ requestId: 'gateway-open', signal: new AbortController().signal }, { op: 'abilities' }))
    knownAbilities.delete(key)
    if (knownAbilities.size >= KNOWN_ABILITIES_MAX) knownAbilities.delete(knownAbilities.keys().next().value!)
    knownAbilities.set(key, abilities)
  }
  return new PoolView(ch, opts, abilities)
}

class PoolView implements View {
  readonly permissions: Permissions
  readonly abilities: FsAbilities
  readonly identity: string
  readonly #ch: Channel
  readonly #opts: OpenViewOptions
  /** The folder shown as `/`, '' for the spec's own root. */
  readonly #root: string
  readonly #only: string | null
  readonly #snapshots: ListSnapshots
  readonly #budget: PendingBudget
  readonly #inPlace: boolean
  readonly #handles = new Set<ProxyHandle>()
  readonly #ended = new AbortController()
  #closed = false
  #readStreams = 0
  #uploadChunks = 0

  constructor(ch: Channel, opts: OpenViewOptions, abilities: BackendAbilities) {
    this.#ch = ch
    this.#opts = opts
    this.permissions = opts.permissions
    this.#root = opts.root === undefined || opts.root === '/' ? '' : opts.root
    this.#only = opts.only ?? null
    const shown = this.#root === '' && this.#only === null ? '' : `\0${this.#root}\0${this.#only ?? ''}`
    this.identity = createHash('sha256').update(backendIdentity(opts.spec) + shown).digest('base64url')
    const { inPlaceWrites, ...fsAbilities } = abilities
    this.abilities = fsAbilities
    this.#inPlace = inPlaceWrites && opts.inPlace !== false
    this.#snapshots = opts.snapshots ?? listSnapshots
    this.#budget = new PendingBudget(opts.limits?.pendingBytes ?? 128 * 1024 * 1024)
  }

  get stats(): ViewStats {
    let live = 0
    let chunks = this.#uploadChunks
    let streams = this.#readStreams
    for (const h of this.#handles) {
      live += h.figures.liveReadStreams
      chunks += h.figures.uploadChunks
      streams += h.figures.readStreams
    }
    return { openHandles: this.#handles.size, readStreams: streams, liveReadStreams: live, uploadChunks: chunks, pendingBytes: this.#budget.bytes }
  }

  // What the storage holds: a file being written is not there before its handle's
  // `close` (a door shows its own session's files itself: gateways/sftp/own-writes.ts).
  stat(ctx: RequestContext, path: string): Promise<FsEntry> {
    return this.#call([path], async () => this.#outEntry(await this.#ch.call(ctx, { op: 'stat', path: this.#in(path) })))
  }

  lstat(ctx: RequestContext, path: string): Promise<FsEntry> {
    return this.#call([path], async () => this.#outEntry(await this.#ch.call(ctx, { op: 'lstat', path: this.#in(path) })))
  }

  list(ctx: RequestContext, dir: string, opts: { readonly cursor?: string | null; readonly after?: string; readonly limit?: number } = {}): Promise<ListPage> {
    return this.#may(['can_read'], [dir], () =>
      // The login's share of the snapshots: by the storage and folder it sees (each view of one login sees the same).
      this.#snapshots.page(this, dir, opts, () => this.#listed(ctx, dir), this.#opts.login ?? this.identity),
    )
  }

  listAll(ctx: RequestContext, dir: string): Promise<FsEntry[]> {
    return this.#may(['can_read'], [dir], () => this.#listed(ctx, dir))
  }

  readFile(ctx: RequestContext, path: string, opts: { readonly range?: RangeSpec; readonly transform?: TransformRequest } = {}): Promise<HeadedStream<ReadHead>> {
    return this.#may(['can_read'], [path], async () => {
      const inner = this.#in(path)
      // Small files come back in the task's reply (measured: a 4 KiB cat cost ~970 µs
      // through a port, ~8 messages); larger ones, and transforms, stream from the actor
      // the same task started.
      const s = await this.#ch.read(
        ctx,
        opts.transform ? { op: 'read', path: inner, transform: opts.transform, inlineMax: 0 } : { op: 'read', path: inner, inlineMax: INLINE_READ_MAX, ...(opts.range ? { range: opts.range } : {}) },
      )
      const head = this.#root === '' ? s.head : { ...s.head, entry: this.#outPath(s.head.entry) }
      if (!s.live) return { ...s, head }
      let release: (() => void) | null
      try {
        release = this.#acquire(ctx)
      } catch (err) {
        s.cancel()
        throw err
      }
      return counted({ ...s, head }, release, (err) => this.#clean(err))
    })
  }

  writeFile(ctx: RequestContext, path: string, body: AsyncIterable<Uint8Array>, opts: WriteFileOptions): Promise<WrittenFile> {
    const below = opts.foldersBelow === undefined ? [] : [opts.foldersBelow]
    return this.#call([path, ...below], async () => {
      const overwrite = await this.#writeTarget(ctx, path, opts.overwrite, false)
      const release = this.#acquire(ctx)
      try {
        const parents = this.permissions.can_create_directory
        const { size, digest, sha256, foldersBelow } = opts
        const metadata = opts.metadata && this.abilities.metadata ? opts.metadata : undefined
        const written = await this.#ch.upload(
          ctx,
          {
            op: 'write',
            path: this.#in(path, true),
            parents,
            overwrite,
            ...(size === undefined ? {} : { size }),
            ...(metadata === undefined ? {} : { metadata }),
            ...(digest === undefined ? {} : { digest }),
            ...(sha256 === undefined ? {} : { sha256 }),
            ...(foldersBelow === undefined ? {} : { foldersBelow: this.#in(foldersBelow) }),
          },
          body,
        )
        const entry = this.#outEntry(written)
        return written.digest === undefined ? entry : { ...entry, digest: written.digest }
      } finally {
        release?.()
      }
    })
  }

  commitStaged(ctx: RequestContext, path: string, source: StagedSource, opts: { readonly overwrite: boolean; readonly size?: number; readonly metadata?: ObjectMetadata }): Promise<FsEntry | null> {
    return this.#call([path], async () => {
      const overwrite = await this.#writeTarget(ctx, path, opts.overwrite, false)
      const release = this.#acquire(ctx)
      try {
        const parents = this.permissions.can_create_directory
        const size = opts.size === undefined ? {} : { size: opts.size }
        const metadata = opts.metadata && this.abilities.metadata ? { metadata: opts.metadata } : {}
        // One task on the transfer lane, on the thread that writes the target: it reads the staged files itself (workers/staged/commit.ts).
        const entry = await this.#ch.transfer(ctx, { op: 'commitStaged', path: this.#in(path, true), source, parents, overwrite, ...size, ...metadata })
        return entry === null ? null : this.#outEntry(entry)
      } finally {
        release?.()
      }
    })
  }

  checkWrite(ctx: RequestContext, path: string, opts: { readonly overwrite: boolean }): Promise<void> {
    return this.#call([path], async () => {
      await this.#writeTarget(ctx, path, opts.overwrite, true)
    })
  }

  mkdir(ctx: RequestContext, dir: string): Promise<void> {
    return this.#may(['can_create_directory'], [dir], () => this.#ch.call(ctx, { op: 'mkdir', path: this.#in(dir, true), parents: false, exclusive: true }))
  }

  makeFolders(ctx: RequestContext, dir: string): Promise<void> {
    return this.#may(['can_create_directory'], [dir], () => this.#ch.call(ctx, { op: 'mkdir', path: this.#in(dir, true), parents: true, exclusive: true }))
  }

  rmdir(ctx: RequestContext, dir: string): Promise<void> {
    return this.#may(['can_delete'], [dir], () => this.#ch.call(ctx, { op: 'remove', path: this.#changed(dir, 'removed'), recursive: false, kind: 'dir' }))
  }

  unlink(ctx: RequestContext, path: string): Promise<void> {
    return this.#may(['can_delete'], [path], () => this.#ch.call(ctx, { op: 'remove', path: this.#changed(path, 'removed'), recursive: false, kind: 'file' }))
  }

  removeTree(ctx: RequestContext, path: string): Promise<void> {
    return this.#may(['can_delete'], [path], () => this.#ch.call(ctx, { op: 'remove', path: this.#changed(path, 'removed'), recursive: true }))
  }

  rename(ctx: RequestContext, from: string, to: string, opts: { readonly overwrite: boolean }): Promise<void> {
    return this.#moveOrRename(ctx, from, to, opts.overwrite, false)
  }

  move(ctx: RequestContext, from: string, to: string, opts: { readonly overwrite: boolean }): Promise<void> {
    return this.#moveOrRename(ctx, from, to, opts.overwrite, this.permissions.can_create_directory)
  }

  #moveOrRename(ctx: RequestContext, from: string, to: string, overwrite: boolean, parents: boolean): Promise<void> {
    const right = parentOf(from) === parentOf(to) ? 'can_rename' : 'can_move'
    return this.#may([right], [from, to], async () => {
      const source = this.#changed(from, 'moved')
      if (to === '/') throw new FsError('EEXIST', 'the root already exists', { path: to })
      const target = this.#in(to, true)
      const replace = overwrite && (await this.#mayReplaceAt(ctx, to))
      await this.#ch.call(ctx, { op: 'move', from: source, to: target, overwrite: replace, parents })
    })
  }

  touch(ctx: RequestContext, path: string): Promise<void> {
    return this.#may(['can_create_file'], [path], async () => {
      if (path === '/') return
      await this.#ch.call(ctx, { op: 'touch', path: this.#in(path, true), parents: this.permissions.can_create_directory })
    })
  }

  zip(ctx: RequestContext, paths: readonly string[], compression: ZipCompression): Promise<HeadedStream<ZipHead>> {
    return this.#may(['can_read'], paths, async () => {
      // A file share's `/` would zip the whole folder: name the file instead.
      const inner = paths.map((p) => (this.#only !== null && p === '/' ? this.#in(`/${this.#only}`) : this.#in(p)))
      const release = this.#acquire(ctx)
      try {
        return counted(await this.#ch.zip(ctx, { op: 'zip', paths: inner, compression }), release, (err) => this.#clean(err))
      } catch (err) {
        release?.()
        throw err
      }
    })
  }

  setTimes(ctx: RequestContext, path: string, times: { readonly mtimeMs: number; readonly atimeMs?: number }): Promise<void> {
    return this.#may(['can_upload'], [path], async () => {
      if (!this.abilities.setTimes) throw new FsError('ENOTSUP', 'this storage keeps no settable modification times', { path })
      if (!Number.isFinite(times.mtimeMs)) throw new FsError('EINVAL', 'a time is a number of milliseconds', { path })
      await this.#ch.call(ctx, { op: 'setMtime', path: this.#in(path, true), mtimeMs: times.mtimeMs })
    })
  }

  setMode(ctx: RequestContext, path: string, mode: number): Promise<void> {
    return this.#may(['can_upload'], [path], async () => {
      if (!this.abilities.modes) throw new FsError('ENOTSUP', 'this storage keeps no permission modes', { path })
      if (!Number.isSafeInteger(mode) || mode < 0) throw new FsError('EINVAL', 'a mode is a whole number', { path })
      await this.#ch.call(ctx, { op: 'setMode', path: this.#in(path, true), mode: mode & 0o7777 })
    })
  }

  truncate(ctx: RequestContext, path: string, size: number): Promise<void> {
    return this.#may(['can_upload'], [path], async () => {
      if (!mayReplace(this.permissions)) throw refusal('can_delete', path, 'replace a file')
      await this.#ch.call(ctx, { op: 'truncate', path: this.#in(path, true), size })
    })
  }

  copy(ctx: RequestContext, from: string, to: string, opts: { readonly overwrite: boolean }): Promise<FsEntry> {
    return this.#may(['can_read', 'can_upload'], [from, to], async () => {
      const source = this.#in(from)
      const target = this.#in(to, true)
      const overwrite = opts.overwrite && (await this.#mayReplaceAt(ctx, to))
      if (!this.permissions.can_create_file && !(await this.#statOrNull(ctx, target))) throw refusal('can_create_file', to)
      return this.#outEntry(await this.#ch.call(ctx, { op: 'copy', from: source, to: target, overwrite }))
    })
  }

  space(ctx: RequestContext, path: string): Promise<Space> {
    return this.#call([path], () => this.#ch.call(ctx, { op: 'space', path: this.#in(path) }))
  }

  metadata(ctx: RequestContext, path: string): Promise<StoredMetadata> {
    return this.#may(['can_read'], [path], async () => {
      if (!this.abilities.metadata) throw new FsError('ENOTSUP', 'this storage keeps no object metadata', { path })
      return this.#ch.call(ctx, { op: 'metadata', path: this.#in(path) })
    })
  }

  open(ctx: RequestContext, path: string, flags: OpenFlags): Promise<FileHandle> {
    return this.#call([path], async () => {
      const writes = flags.write || flags.append || flags.create || flags.truncate
      if (flags.read) this.#need('can_read', path)
      if (writes) this.#need('can_upload', path)
      if (path === '/') throw new FsError('EISDIR', '/: is a directory', { path })
      const inner = this.#in(path, writes)
      const exclusive = flags.create && flags.exclusive ? this.#reserve(path) : null
      const limits = this.#opts.limits ?? {}
      const windowBytes = limits.windowBytes ?? 64 * 1024 * 1024
      const open: HandleOpen = {
        flags,
        inPlace: this.#inPlace,
        stagingDir: this.#opts.stagingDir,
        chunkBytes: limits.chunkBytes ?? 1024 * 1024,
        windowBytes,
        idleMs: limits.idleMs ?? 2000,
      }
      let started: { actor: HandleActor; opened: HandleOpened }
      try {
        started = await this.#startActor(ctx, inner, open)
      } catch (err) {
        exclusive?.()
        throw err
      }
      const { actor } = started
      const { entry: found, mode } = started.opened
      const entry = found && this.#outPath(found)
      let transfer: (() => void) | null = null
      try {
        if (this.#closed) throw new FsError('ECANCELED', 'the session is closed') // while the open was checked
        // The worker told whether the file exists: writing into one, or truncating it,
        // replaces what was there; a new one needs its own bit. Refused, the actor commits nothing.
        if (entry && flags.write && !mayReplace(this.permissions)) throw refusal('can_delete', path, 'replace a file')
        if (!entry && flags.write) this.#need('can_create_file', path)
        transfer = this.#transfer(ctx, flags, entry)
      } catch (err) {
        actor.port.postMessage({ t: 'abort' } satisfies ToHandle)
        actor.port.close()
        exclusive?.()
        throw err
      }
      const owner = { login: this.#opts.client?.credential ?? null, share: null }
      const quota = this.#opts.stagingQuota
      const handle: ProxyHandle = new ProxyHandle(path, flags, {
        actor,
        initial: entry,
        mode,
        windowBytes,
        budget: this.#budget,
        ...(quota ? { hold: () => quota.hold(this.#opts.stagingDir, owner) } : {}),
        unstage: (name) => {
          // The actor's port may tell of its death before the pool knows: a task sent to the
          // dying thread fails (EIO) and is sent again, to its replacement.
          const attempt = (left: number): void =>
            void this.#ch.call({ requestId: ctx.requestId, signal: new AbortController().signal }, { op: 'unstage', dir: this.#opts.stagingDir, name }).catch((err: unknown) => {
              if (left > 0 && (err as FsError).code === 'EIO') setTimeout(() => attempt(left - 1), RETRY_MS).unref()
            })
          attempt(4)
        },
        // The same open task again, on a live thread (a file only read whose thread died).
        reopen: async () => {
          const again = await this.#startActor(ctx, inner, open, 4)
          if (this.#closed) {
            again.actor.port.postMessage({ t: 'abort' } satisfies ToHandle)
            again.actor.port.close()
            throw new FsError('ECANCELED', 'the session is closed')
          }
          return { actor: again.actor, entry: again.opened.entry && this.#outPath(again.opened.entry) }
        },
        onEnd: (figures) => {
          exclusive?.()
          transfer?.()
          this.#handles.delete(handle)
          this.#readStreams += figures.readStreams
          this.#uploadChunks += figures.uploadChunks
          ctx.signal.removeEventListener('abort', onAbort)
        },
      })
      const onAbort = () => handle.abort()
      this.#handles.add(handle)
      if (ctx.signal.aborted) handle.abort()
      else ctx.signal.addEventListener('abort', onAbort, { once: true })
      return this.#root === '' ? handle : cleanHandle(handle, (err) => this.#clean(err))
    })
  }

  /**
   * One `open` task: the worker checks the open and keeps the file as an actor next to its
   * driver (workers/handles/), on the port it is given. `retries`: times a task the pool
   * failed with EIO is sent again (a thread that died may not be known dead yet: a task
   * sent to it fails, and goes to a live one next time).
   */
  async #startActor(ctx: RequestContext, inner: string, open: HandleOpen, retries = 0): Promise<{ actor: HandleActor; opened: HandleOpened }> {
    for (let left = retries; ; left--) {
      const { port1, port2 } = new MessageChannel()
      try {
        const started = await this.#ch.start(ctx, { op: 'open' as const, path: inner, port: port2, open }, [port2])
        return { actor: { port: port1, thread: started }, opened: started.value }
      } catch (err) {
        port1.close()
        if (left <= 0 || !isFsError(err) || err.code !== 'EIO' || ctx.signal.aborted) throw err
        await new Promise((r) => setTimeout(r, RETRY_MS))
      }
    }
  }

  /**
   * An exclusive creation reserves its name until its handle ends, in this process, for
   * every view of the same storage and folder: of openers racing for one new name, the
   * first gets the handle and the others EEXIST at once, not at CLOSE. (The commit does
   * not replace a file either, which still decides between processes.)
   */
  #reserve(path: string): () => void {
    const key = `${this.identity}\0${path}`
    if (creating.has(key)) throw new FsError('EEXIST', `${path}: already exists (being created)`, { path })
    creating.add(key)
    let done = false
    return () => {
      if (done) return
      done = true
      creating.delete(key)
    }
  }

  /** Counts a handle that moves a file's bytes as a transfer of its client. @throws EBUSY past a limit */
  #transfer(ctx: RequestContext, flags: OpenFlags, initial: Entry | null): (() => void) | null {
    const fresh = flags.write && (initial === null || flags.truncate)
    const put = fresh && !flags.read
    const streams = flags.read && !fresh && initial !== null && initial.size > INLINE_READ_MAX
    if (!put && !streams) return null
    return this.#acquire(ctx)
  }

  /** Counts one transfer of the request's client (else the view's). @throws EBUSY past a limit */
  #acquire(ctx: RequestContext): (() => void) | null {
    const client = ctx.client ?? this.#opts.client
    if (!this.#opts.transfers || !client) return null
    try {
      return this.#opts.transfers.acquire(client)
    } catch (err) {
      throw asFsError(err)
    }
  }

  close(): void {
    this.#closed = true
    for (const h of [...this.#handles]) h.abort()
    this.#ended.abort()
  }

  get ended(): AbortSignal {
    return this.#ended.signal
  }

  /** A folder's entries as the storage lists them (a file share's `/`: its one file). */
  async #listed(ctx: RequestContext, dir: string): Promise<FsEntry[]> {
    const entries = (await this.#ch.call(ctx, { op: 'list', path: this.#in(dir) })).map((e) => this.#outEntry(e))
    return this.#only === null ? entries : entries.filter((e) => e.name === this.#only)
  }

  /**
   * Whether `writeFile` to `path` may go on, and with which `overwrite`: can_upload;
   * can_create_file for a new file; a file there is replaced only with `mayReplace` and
   * `overwrite` (EACCES, EEXIST). Looks at the target only when the answer depends on it
   * (or `look`: always, so that a link leading out of the root is refused now).
   */
  async #writeTarget(ctx: RequestContext, path: string, overwrite: boolean, look: boolean): Promise<boolean> {
    this.#need('can_upload', path)
    if (path === '/') throw new FsError('EISDIR', 'the path must name a file, not a folder', { path })
    const inner = this.#in(path, true)
    const replace = mayReplace(this.permissions)
    if (!look && replace && overwrite && this.permissions.can_create_file) return true
    const there = await this.#statOrNull(ctx, inner)
    if (there === null) {
      if (!this.permissions.can_create_file) throw refusal('can_create_file', path)
    } else if (there.kind === 'file') {
      if (!replace) throw refusal('can_delete', path, 'replace a file')
      if (!overwrite) throw new FsError('EEXIST', `${path} already exists (overwrite is false)`, { path })
    }
    return overwrite && replace
  }

  /** Any call: the view is open and the paths are canonical (what the doors' path rules give); errors never show the root above `/`. */
  async #call<T>(paths: readonly string[], fn: () => Promise<T>): Promise<T> {
    try {
      return await fsCall(async () => {
        if (this.#closed) throw new FsError('ECANCELED', 'the session is closed')
        for (const p of paths) if (!isCanonical(p)) throw new FsError('EINVAL', 'not a canonical path')
        return fn()
      })
    } catch (err) {
      throw this.#clean(err)
    }
  }

  /** A call that needs `rights`: refused (EACCES) before anything reaches a worker when one is missing. */
  #may<T>(rights: readonly PermissionName[], paths: readonly string[], fn: () => Promise<T>): Promise<T> {
    return this.#call(paths, async () => {
      for (const r of rights) this.#need(r, paths[0]!)
      return fn()
    })
  }

  /** The backend path of a view path. A file share lets its one name through (and `/` to look at); else ENOENT, or EACCES for a change (`write`). */
  #in(path: string, write = false): string {
    if (this.#only !== null && path !== `/${this.#only}` && !(path === '/' && !write)) {
      throw write ? new FsError('EACCES', 'this share allows only its one file', { path }) : new FsError('ENOENT', `${path}: no such file or directory`, { path })
    }
    if (this.#root === '') return path
    return path === '/' ? this.#root : this.#root + path
  }

  /** The backend path of what is removed or moved: never the view's root. */
  #changed(path: string, what: 'removed' | 'moved'): string {
    if (path === '/') throw new FsError('EACCES', `the root cannot be ${what}`, { path })
    return this.#in(path, true)
  }

  /** A backend path as the view shows it. */
  #out(path: string): string {
    if (this.#root === '' || path === this.#root) return this.#root === '' ? path : '/'
    return path.startsWith(this.#root + '/') ? path.slice(this.#root.length) : '/'
  }

  #outPath(e: Entry): Entry {
    return this.#root === '' ? e : { ...e, path: this.#out(e.path) }
  }

  #outEntry(e: Entry): FsEntry {
    return toFsEntry(this.#outPath(e))
  }

  /** An error with the backend path above the view's root taken out of its message and `path`. */
  #clean(err: unknown): unknown {
    if (!isFsError(err) || this.#root === '') return err
    const message = err.message.split(this.#root + '/').join('/').split(this.#root).join('/')
    return new FsError(err.code, message, { retryable: err.retryable, ...(err.path === undefined ? {} : { path: this.#out(err.path) }) })
  }

  /** Stat of a backend path that answers null instead of ENOENT. */
  async #statOrNull(ctx: RequestContext, inner: string): Promise<Entry | null> {
    try {
      return await this.#ch.call(ctx, { op: 'stat', path: inner })
    } catch (err) {
      if ((err as FsError).code === 'ENOENT') return null
      throw err
    }
  }

  /** @throws EACCES without `right` */
  #need(right: PermissionName, path: string): void {
    if (!this.permissions[right]) throw refusal(right, path)
  }

  /**
   * Whether an overwriting rename, move or copy onto `to` may replace it: always when the
   * login may replace files; else only when nothing is there (EACCES when a file is).
   */
  async #mayReplaceAt(ctx: RequestContext, to: string): Promise<boolean> {
    if (mayReplace(this.permissions)) return true
    if (await this.#statOrNull(ctx, this.#in(to, true))) throw refusal('can_delete', to, 'replace a file')
    return false
  }
}

/** A stream that releases its transfer's count when it is over (read to the end, failed or cancelled); its errors cleaned by `clean`. */
function counted<H>(s: HeadedStream<H>, release: (() => void) | null, clean: (err: unknown) => unknown): HeadedStream<H> {
  async function* body(): AsyncIterable<Uint8Array> {
    try {
      yield* s.body
    } catch (err) {
      throw clean(err)
    } finally {
      release?.()
    }
  }
  return {
    head: s.head,
    body: body(),
    live: true,
    cancel: () => {
      s.cancel()
      release?.()
    },
  }
}

/** A handle of a view shown from a folder: its errors never show the path above it. */
function cleanHandle(h: FileHandle, clean: (err: unknown) => unknown): FileHandle {
  const cleaned =
    <A extends unknown[], R>(fn: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      try {
        return await fn(...a)
      } catch (err) {
        throw clean(err)
      }
    }
  return {
    path: h.path,
    flags: h.flags,
    read: cleaned((offset: number, length: number) => h.read(offset, length)),
    write: cleaned((offset: number, data: Uint8Array, opts?: { readonly give?: boolean }) => h.write(offset, data, opts)),
    stat: cleaned(() => h.stat()),
    truncate: cleaned((size: number) => h.truncate(size)),
    close: cleaned(() => h.close()),
    abort: () => h.abort(),
  }
}
