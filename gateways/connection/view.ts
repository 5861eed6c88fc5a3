/**
 * @module gateways/connection/view
 * The file system the protocol gateways act on (core/protocol-fs.ts), built over the
 * worker pool: `createProtocolFs` gives one logged-in user's view of one backend. The
 * user's root is the backend spec's root (the login builds a spec rooted at the user's
 * folder), so paths are used as given and the drivers' containment (the local driver's
 * symlink-safe pins) holds at the user's root.
 *
 * Parts, each in gateways/connection/: list-pages.ts (listings in pages with cursors),
 * file-handle.ts (an open file: a proxy on its actor's port; the file itself, with its
 * read-ahead, coalescing, in-place writes and staging copy, lives in the worker that owns
 * the backend, workers/handles/), errors.ts (every failure an FsError); the view's cap on
 * bytes waiting to cross to the actors is core/pending-budget.ts. docs/gateways.md, "The gateway layer", says what
 * a view guarantees.
 */
import { MessageChannel } from 'node:worker_threads'
import { createHash } from 'node:crypto'
import { type BackendSpec, backendIdentity } from '../../core/backend.js'
import type { Entry, Space, StoredMetadata } from '../../core/driver.js'
import { FsError } from '../../core/errors.js'
import { isCanonical, parentOf } from '../../core/paths.js'
import type { BackendAbilities, HandleOpen, HandleOpened, ToHandle } from '../../core/messages.js'
import { PendingBudget } from '../../core/pending-budget.js'
import { type PermissionName, type Permissions, mayReplace } from '../../core/permissions.js'
import type { FileHandle, FsAbilities, FsEntry, ListPage, OpenFlags, OpenOptions, ProtocolFs } from '../../core/protocol-fs.js'
import type { StagingQuota } from '../../core/staging-quota.js'
import type { ClientIdentity, RequestContext } from '../../core/storage.js'
import { Channel, INLINE_READ_MAX } from '../../workers/client.js'
import type { Started, WorkerPool } from '../../workers/pool.js'
import { asFsError, fsCall, refused } from './errors.js'
import { ProxyHandle, toFsEntry } from './file-handle.js'
import { ListSnapshots } from './list-pages.js'

export { sweepStaging } from './staging-sweep.js'
export { ListSnapshots } from './list-pages.js'

export interface GatewayFsLimits {
  /** Coalesced chunk size before bytes cross to a worker (default 1 MiB). */
  readonly chunkBytes?: number
  /** Per handle: bytes held out of order, or waiting to cross, before writes wait (default 64 MiB). */
  readonly windowBytes?: number
  /** Per view: bytes waiting to cross, all handles together, before writes wait (default 128 MiB). */
  readonly pendingBytes?: number
  /** A read-ahead stream not read for this long is dropped (default 2000 ms). */
  readonly idleMs?: number
}

export interface GatewayFsOptions {
  readonly pool: WorkerPool
  /** The user's backend; its root is the user's root. */
  readonly spec: BackendSpec
  /** backendKey(spec), when the caller has it. */
  readonly key?: string
  /** What the login may do: each operation is checked against these bits before it reaches a worker (core/protocol-fs.ts). */
  readonly permissions: Permissions
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
   * The fairness limits on concurrent transfers (gateways/connection/transfer-limits.ts), shared with
   * the HTTP API: a handle that moves a file's bytes (a read of a file larger than a
   * task's inline answer, a `put`) counts as one transfer from its open to its end; past
   * a limit the open is refused (EBUSY, saying which limit).
   */
  readonly transfers?: { acquire(client: ClientIdentity): () => void }
  /** Listing snapshots, shared by the views of a process (default: one per process). */
  readonly snapshots?: ListSnapshots
  readonly limits?: GatewayFsLimits
  /** Write in place where the backend can (default); false: staging for every write that is not a `put`. */
  readonly inPlace?: boolean
}

/** The process's listing snapshots: every view's, and the HTTP API's `ls` pages. */
export const listSnapshots = new ListSnapshots()
/** Names being created exclusively, by view identity and path (`#reserve`). */
const creating = new Set<string>()

/** A view's figures, for tests and metrics. */
export interface GatewayFsStats {
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

export type GatewayProtocolFs = ProtocolFs & { readonly stats: GatewayFsStats }

/**
 * Opens a user's view: one task asks a worker what the backend can do. The worker makes
 * the backend's driver if it has none for this spec, which for a remote backend connects
 * and logs in: a wrong pass-through password fails here (EAUTH), an unreachable server too
 * (EUNAVAILABLE, ETIMEDOUT).
 */
export async function createProtocolFs(opts: GatewayFsOptions): Promise<GatewayProtocolFs> {
  const ch = new Channel(opts.pool, opts.spec, opts.key)
  const abilities = await fsCall(() => ch.call({ requestId: 'gateway-open', signal: new AbortController().signal }, { op: 'abilities' }))
  return new GatewayFs(ch, opts, abilities)
}

class GatewayFs implements ProtocolFs {
  readonly permissions: Permissions
  readonly abilities: FsAbilities
  readonly identity: string
  readonly #ch: Channel
  readonly #opts: GatewayFsOptions
  readonly #snapshots: ListSnapshots
  readonly #budget: PendingBudget
  readonly #inPlace: boolean
  readonly #handles = new Set<ProxyHandle>()
  readonly #ended = new AbortController()
  #closed = false
  #readStreams = 0
  #uploadChunks = 0

  constructor(ch: Channel, opts: GatewayFsOptions, abilities: BackendAbilities) {
    this.#ch = ch
    this.#opts = opts
    this.permissions = opts.permissions
    this.identity = createHash('sha256').update(backendIdentity(opts.spec)).digest('base64url')
    const { inPlaceWrites, ...fsAbilities } = abilities
    this.abilities = fsAbilities
    this.#inPlace = inPlaceWrites && opts.inPlace !== false
    this.#snapshots = opts.snapshots ?? listSnapshots
    this.#budget = new PendingBudget(opts.limits?.pendingBytes ?? 128 * 1024 * 1024)
  }

  get stats(): GatewayFsStats {
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
    return this.#call([path], async () => toFsEntry(await this.#ch.call(ctx, { op: 'stat', path })))
  }

  lstat(ctx: RequestContext, path: string): Promise<FsEntry> {
    return this.#call([path], async () => toFsEntry(await this.#ch.call(ctx, { op: 'lstat', path })))
  }

  list(ctx: RequestContext, dir: string, opts: { readonly cursor?: string | null; readonly after?: string; readonly limit?: number } = {}): Promise<ListPage> {
    return this.#may(['can_read'], [dir], () =>
      // The login's share of the snapshots: by the storage root it sees (each view of one login sees the same).
      this.#snapshots.page(this, dir, opts, async () => (await this.#ch.call(ctx, { op: 'list', path: dir })).map(toFsEntry), this.identity),
    )
  }

  mkdir(ctx: RequestContext, dir: string): Promise<void> {
    return this.#may(['can_create_directory'], [dir], () => this.#ch.call(ctx, { op: 'mkdir', path: dir, parents: false, exclusive: true }))
  }

  rmdir(ctx: RequestContext, dir: string): Promise<void> {
    return this.#may(['can_delete'], [dir], () => this.#ch.call(ctx, { op: 'remove', path: dir, recursive: false, kind: 'dir' }))
  }

  unlink(ctx: RequestContext, path: string): Promise<void> {
    return this.#may(['can_delete'], [path], () => this.#ch.call(ctx, { op: 'remove', path, recursive: false, kind: 'file' }))
  }

  rename(ctx: RequestContext, from: string, to: string, opts: { readonly overwrite: boolean }): Promise<void> {
    const right = parentOf(from) === parentOf(to) ? 'can_rename' : 'can_move'
    return this.#may([right], [from, to], async () => {
      const overwrite = opts.overwrite && (await this.#mayReplaceAt(ctx, to))
      await this.#ch.call(ctx, { op: 'move', from, to, overwrite, parents: false })
    })
  }

  setTimes(ctx: RequestContext, path: string, times: { readonly mtimeMs: number; readonly atimeMs?: number }): Promise<void> {
    return this.#may(['can_upload'], [path], async () => {
      if (!this.abilities.setTimes) throw new FsError('ENOTSUP', 'this storage keeps no settable modification times', { path })
      if (!Number.isFinite(times.mtimeMs)) throw new FsError('EINVAL', 'a time is a number of milliseconds', { path })
      await this.#ch.call(ctx, { op: 'setMtime', path, mtimeMs: times.mtimeMs })
    })
  }

  setMode(ctx: RequestContext, path: string, mode: number): Promise<void> {
    return this.#may(['can_upload'], [path], async () => {
      if (!this.abilities.modes) throw new FsError('ENOTSUP', 'this storage keeps no permission modes', { path })
      if (!Number.isSafeInteger(mode) || mode < 0) throw new FsError('EINVAL', 'a mode is a whole number', { path })
      await this.#ch.call(ctx, { op: 'setMode', path, mode: mode & 0o7777 })
    })
  }

  truncate(ctx: RequestContext, path: string, size: number): Promise<void> {
    return this.#may(['can_upload'], [path], async () => {
      if (!mayReplace(this.permissions)) throw refused('can_delete', path, 'replace a file')
      await this.#ch.call(ctx, { op: 'truncate', path, size })
    })
  }

  copy(ctx: RequestContext, from: string, to: string, opts: { readonly overwrite: boolean }): Promise<FsEntry> {
    return this.#may(['can_read', 'can_upload'], [from, to], async () => {
      const overwrite = opts.overwrite && (await this.#mayReplaceAt(ctx, to))
      if (!this.permissions.can_create_file && !(await this.#statOrNull(ctx, to))) throw refused('can_create_file', to)
      return toFsEntry(await this.#ch.call(ctx, { op: 'copy', from, to, overwrite }))
    })
  }

  space(ctx: RequestContext, path: string): Promise<Space> {
    return this.#call([path], () => this.#ch.call(ctx, { op: 'space', path }))
  }

  metadata(ctx: RequestContext, path: string): Promise<StoredMetadata> {
    return this.#may(['can_read'], [path], async () => {
      if (!this.abilities.metadata) throw new FsError('ENOTSUP', 'this storage keeps no object metadata', { path })
      return this.#ch.call(ctx, { op: 'metadata', path })
    })
  }

  open(ctx: RequestContext, path: string, flags: OpenFlags, opts: OpenOptions = {}): Promise<FileHandle> {
    return this.#call([path], async () => {
      const writes = flags.write || flags.append || flags.create || flags.truncate
      if (flags.read) this.#need('can_read', path)
      if (writes) this.#need('can_upload', path)
      if (path === '/') throw new FsError('EISDIR', '/: is a directory', { path })
      const exclusive = flags.create && flags.exclusive ? this.#reserve(path) : null
      const limits = this.#opts.limits ?? {}
      const windowBytes = limits.windowBytes ?? 64 * 1024 * 1024
      // One task: the worker checks the open and keeps the file as an actor next to its driver (workers/handles/).
      const { port1, port2 } = new MessageChannel()
      const open: HandleOpen = {
        flags,
        ...(opts.metadata && this.abilities.metadata ? { metadata: opts.metadata } : {}),
        ...(opts.digest ? { digest: opts.digest } : {}),
        inPlace: this.#inPlace,
        stagingDir: this.#opts.stagingDir,
        chunkBytes: limits.chunkBytes ?? 1024 * 1024,
        windowBytes,
        idleMs: limits.idleMs ?? 2000,
      }
      let started: Started<HandleOpened>
      try {
        started = await this.#ch.start(ctx, { op: 'open' as const, path, port: port2, open }, [port2])
      } catch (err) {
        port1.close()
        exclusive?.()
        throw err
      }
      const { entry, mode } = started.value
      let transfer: (() => void) | null = null
      try {
        if (this.#closed) throw new FsError('ECANCELED', 'the session is closed') // while the open was checked
        // The worker told whether the file exists: writing into one, or truncating it,
        // replaces what was there; a new one needs its own bit. Refused, the actor commits nothing.
        if (entry && flags.write && !mayReplace(this.permissions)) throw refused('can_delete', path, 'replace a file')
        if (!entry && flags.write) this.#need('can_create_file', path)
        transfer = this.#transfer(ctx, flags, entry)
      } catch (err) {
        port1.postMessage({ t: 'abort' } satisfies ToHandle)
        port1.close()
        exclusive?.()
        throw err
      }
      const owner = { login: this.#opts.client?.credential ?? null, share: null }
      const quota = this.#opts.stagingQuota
      const handle: ProxyHandle = new ProxyHandle(path, flags, {
        port: port1,
        initial: entry,
        mode,
        windowBytes,
        budget: this.#budget,
        ...(quota ? { hold: () => quota.hold(this.#opts.stagingDir, owner) } : {}),
        live: () => {
          const lease = started.lease((err) => handle.lost(err))
          return () => lease.release()
        },
        unstage: (name) => {
          // The actor's port may tell of its death before the pool knows: a task sent to the
          // dying thread fails (EIO) and is sent again, to its replacement.
          const attempt = (left: number): void =>
            void this.#ch.call({ requestId: ctx.requestId, signal: new AbortController().signal }, { op: 'unstage', dir: this.#opts.stagingDir, name }).catch((err: unknown) => {
              if (left > 0 && (err as FsError).code === 'EIO') setTimeout(() => attempt(left - 1), 250).unref()
            })
          attempt(4)
        },
        onEnd: (figures, lost) => {
          exclusive?.()
          transfer?.()
          // Lost with its thread: the pool's watch stays until it removed the upload's temporary file.
          if (!lost) watch.release()
          this.#handles.delete(handle)
          this.#readStreams += figures.readStreams
          this.#uploadChunks += figures.uploadChunks
          ctx.signal.removeEventListener('abort', onAbort)
        },
      })
      const watch = started.watch((err) => handle.lost(err))
      const onAbort = () => handle.abort()
      this.#handles.add(handle)
      if (ctx.signal.aborted) handle.abort()
      else ctx.signal.addEventListener('abort', onAbort, { once: true })
      return handle
    })
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
    const client = ctx.client ?? this.#opts.client
    if (!this.#opts.transfers || !client) return null
    const fresh = flags.write && (initial === null || flags.truncate)
    const put = fresh && !flags.read
    const streams = flags.read && !fresh && initial !== null && initial.size > INLINE_READ_MAX
    if (!put && !streams) return null
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

  /** Any call: the view is open and the paths are canonical (what `resolveProtocolPath` gives). */
  #call<T>(paths: readonly string[], fn: () => Promise<T>): Promise<T> {
    return fsCall(async () => {
      if (this.#closed) throw new FsError('ECANCELED', 'the session is closed')
      for (const p of paths) if (!isCanonical(p)) throw new FsError('EINVAL', 'not a canonical path')
      return fn()
    })
  }

  /** A call that needs `rights`: refused (EACCES) before anything reaches a worker when one is missing. */
  #may<T>(rights: readonly PermissionName[], paths: readonly string[], fn: () => Promise<T>): Promise<T> {
    return this.#call(paths, async () => {
      for (const r of rights) this.#need(r, paths[0]!)
      return fn()
    })
  }

  async #statOrNull(ctx: RequestContext, path: string): Promise<Entry | null> {
    try {
      return await this.#ch.call(ctx, { op: 'stat', path })
    } catch (err) {
      if ((err as FsError).code === 'ENOENT') return null
      throw err
    }
  }

  /** @throws EACCES without `right` */
  #need(right: PermissionName, path: string): void {
    if (!this.permissions[right]) throw refused(right, path)
  }

  /**
   * Whether an overwriting rename or copy onto `to` may replace it: always when the login
   * may replace files; else only when nothing is there (EACCES when a file is).
   */
  async #mayReplaceAt(ctx: RequestContext, to: string): Promise<boolean> {
    if (mayReplace(this.permissions)) return true
    if (await this.#statOrNull(ctx, to)) throw refused('can_delete', to, 'replace a file')
    return false
  }
}
