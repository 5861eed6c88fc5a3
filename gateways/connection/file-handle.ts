/**
 * @module gateways/connection/file-handle
 * MAIN THREAD. An open file (core/view.ts `FileHandle`) as a thin proxy on its
 * actor's port: the file itself (read-ahead, coalescing, in-place writes, the staging
 * copy) lives in the worker that owns the backend (workers/handles/). Each call is a
 * typed message (core/messages.ts `ToHandle`), sent in the order calls come; the actor
 * takes them in that order, so reads see the writes before them.
 *
 * Writes: contiguous writes are joined into batches of up to `BATCH_BYTES` (one copy,
 * core/chunk-buffer.ts) so that an SFTP client's 32 KiB writes are not one message
 * each; a batch goes when full, when a write does not follow it, before any other call,
 * and at the end of the event loop's turn. A large write given away (`give`) crosses as
 * it is, moved. A write resolves once the actor took its batch (`taken`), with that
 * batch's error if it failed; an upload's own error shows at a later write or at close,
 * as the actor's coalescer tells it. Bytes sent and not yet taken are bounded per handle
 * (`windowBytes`) and per view (its `PendingBudget`): past either, writes wait.
 *
 * The staging copy's bytes are charged here, where the staging bounds are counted
 * (core/staging-quota.ts), as the actor asks (`hold`). The handle ends at close, or at
 * abort (the connection or the view went: nothing committed).
 *
 * When the actor's worker thread dies (its port closes, or the pool's watch tells):
 * - a file only read goes on: the calls it had in flight, and the next ones, go to a new
 *   actor on a live thread (`reopen`, the same open task again), each read at its own
 *   offset, provided the file is unchanged (the same size and mtime as at open); a file
 *   that changed or is gone fails its reads with EIO saying so (one that cannot be opened
 *   again for another reason, with that reason: EOVERLOAD at shutdown, say).
 *   At most `MAX_REOPENS` times per handle: a file whose reads kill their thread every
 *   time must not take thread after thread (and everyone else's requests) with it;
 * - a file that writes fails (EIO, at its next write or close) and commits nothing: the
 *   pool removes the upload's temporary file, and the staging copy, whose name the actor
 *   told before creating it, is removed by another thread (`unstage`). In-place runs
 *   already written stay, as when a client's connection is lost.
 */
import type { MessagePort, Transferable } from 'node:worker_threads'
import { ChunkBuffer } from '../../core/chunk-buffer.js'
import type { Entry } from '../../core/driver.js'
import { FsError, fromWire, toWire } from '../../core/errors.js'
import type { FromHandle, HandleFigures, HandleMode, ToHandle } from '../../core/messages.js'
import type { PendingBudget } from '../../core/pending-budget.js'
import type { FileHandle, FsEntry, OpenFlags } from '../../core/view.js'
import type { StagingHold } from '../../core/staging-quota.js'
import { asFsError } from './errors.js'

/** How long an ended file waits for its actor to close the port before closing it itself. */
const SETTLE_GUARD_MS = 60_000

/** Small writes joined into one message up to this many bytes. */
export const BATCH_BYTES = 256 * 1024

/** Times a file only read is opened again after its thread died, at most. */
export const MAX_REOPENS = 3

/** What the file needs of its actor's thread (workers/pool.ts `Started`). */
export interface ActorThread {
  /** Counts a live stream or upload as a transfer on the thread. @throws when that thread has its fill */
  lease(onLost: (err: FsError) => void): { release(): void }
  /** Keeps watch over the actor: `onLost` if its thread dies first (its temporary files are removed then). */
  watch(onLost: (err: FsError) => void): { release(): void }
}

/** One actor of the file: the port it takes calls on, and its thread. */
export interface HandleActor {
  readonly port: MessagePort
  readonly thread: ActorThread
}

/** A read handle's file opened again on a live thread: the new actor, and the file as it found it. */
export interface Reopened {
  readonly actor: HandleActor
  readonly entry: Entry | null
}

export interface FileHandleDeps {
  readonly actor: HandleActor
  readonly initial: Entry | null
  readonly mode: HandleMode
  readonly windowBytes: number
  readonly budget: PendingBudget
  /** Makes the staging copy's hold, the first time the actor asks to charge bytes (absent: no bounds). */
  readonly hold?: () => StagingHold
  /** Removes the staging copy `name` (its thread died). */
  readonly unstage: (name: string) => void
  /** Opens the file again as it was opened, on a live thread (used for a file only read, when its thread died). */
  readonly reopen?: () => Promise<Reopened>
  readonly onEnd: (figures: HandleFigures) => void
}

interface Batch {
  readonly offset: number
  readonly buf: ChunkBuffer
  readonly waiters: { resolve(): void; reject(err: unknown): void }[]
}

type Waiter = { resolve(v: unknown): void; reject(err: unknown): void }

/** A call awaiting its answer, with its message (sent again to a new actor). */
interface Call extends Waiter {
  readonly msg: ToHandle
}

const NO_FIGURES: HandleFigures = { readStreams: 0, liveReadStreams: 0, uploadChunks: 0, uploading: false }

export class ProxyHandle implements FileHandle {
  readonly path: string
  readonly flags: OpenFlags
  readonly #d: FileHandleDeps
  /** The actor now (null: its thread died and no other has it yet). */
  #actor: HandleActor | null = null
  /** The pool's watch over the actor's thread. */
  #watch: { release(): void } | null = null
  #figures: HandleFigures = NO_FIGURES
  /** Streams and chunks counted by actors that went. */
  #before = { readStreams: 0, uploadChunks: 0 }
  /** Releases the transfer counted while a stream or upload is live. */
  #live: (() => void) | null = null
  #state: 'open' | 'closing' | 'done' = 'open'
  #error: FsError | null = null
  #closing: Promise<void> | null = null
  #reopens = 0
  #reopening = false
  #nextId = 1
  /** Calls awaiting their answer, by id (in the order they were made). */
  readonly #calls = new Map<number, Call>()
  /** Batches sent and not yet taken, in order (the actor answers them in order). */
  readonly #sent: { bytes: number; waiters: Batch['waiters'] }[] = []
  #batch: Batch | null = null
  #flushQueued = false
  /** Bytes sent or batched, not yet taken. */
  #inflight = 0
  #roomWaiters: (() => void)[] = []
  /** The file's size as this handle writes it (null: it does not write it, or not yet). */
  #size: number | null
  #hold: StagingHold | null = null
  #staged: string | null = null

  constructor(path: string, flags: OpenFlags, deps: FileHandleDeps) {
    this.path = path
    this.flags = flags
    this.#d = deps
    const fresh = flags.write && (deps.initial === null || flags.truncate)
    this.#size = deps.mode === 'put' || (deps.mode === 'staging' && fresh) ? 0 : deps.mode === 'inPlace' ? deps.initial!.size : null
    this.#attach(deps.actor)
  }

  /** What the actors told of their read-ahead and chunks. */
  get figures(): HandleFigures {
    const f = this.#figures
    return { ...f, readStreams: this.#before.readStreams + f.readStreams, uploadChunks: this.#before.uploadChunks + f.uploadChunks }
  }

  /** Bytes written and not yet taken by the actor. */
  get pending(): number {
    return this.#inflight
  }

  read(offset: number, length: number): Promise<Uint8Array> {
    return this.#call<Uint8Array>((id) => ({ t: 'read', id, offset, length }))
  }

  async write(offset: number, data: Uint8Array, opts: { readonly give?: boolean } = {}): Promise<void> {
    if (!this.#usable()) throw this.#error ?? closedError(this.path)
    if (this.#d.mode === 'read') throw new FsError('EACCES', 'this file was not opened for writing', { path: this.path })
    if (!Number.isSafeInteger(offset) || offset < 0) throw new FsError('EINVAL', 'an offset and a length are whole numbers of bytes', { path: this.path })
    if (data.byteLength === 0) return
    while (this.#usable() && (this.#inflight > this.#d.windowBytes || !this.#d.budget.hasRoom())) {
      await new Promise<void>((r) => {
        this.#roomWaiters.push(r)
        this.#d.budget.wait(r)
      })
    }
    if (!this.#usable()) throw this.#error ?? closedError(this.path)
    if (this.#size !== null || (this.#d.mode === 'staging' && this.#d.initial)) {
      const base = this.#size ?? this.#d.initial!.size
      this.#size = this.flags.append ? base + data.byteLength : Math.max(base, offset + data.byteLength)
    }
    this.#inflight += data.byteLength
    this.#d.budget.add(data.byteLength)
    return new Promise<void>((resolve, reject) => {
      const w = { resolve, reject }
      const b = this.#batch
      const follows = b !== null && (this.flags.append || b.offset + b.buf.bytes === offset) && b.buf.bytes + data.byteLength <= BATCH_BYTES
      if (data.byteLength >= BATCH_BYTES / 4) {
        // Large: a message of its own. Given away and owning its buffer, it is moved as it
        // is; else copied once (a view would clone its whole underlying buffer).
        this.#flush()
        const give = opts.give === true && wholeBuffer(data)
        const own = give ? data : Uint8Array.prototype.slice.call(data)
        this.#send({ t: 'write', offset, data: own, give }, own.byteLength, [w], [own.buffer as ArrayBuffer])
        return
      }
      if (!follows) {
        this.#flush()
        this.#batch = { offset, buf: new ChunkBuffer(BATCH_BYTES), waiters: [] }
      }
      const batch = this.#batch!
      batch.buf.add(data)
      batch.waiters.push(w)
      if (batch.buf.full) this.#flush()
      else if (!this.#flushQueued) {
        this.#flushQueued = true
        setImmediate(() => {
          this.#flushQueued = false
          this.#flush()
        })
      }
    })
  }

  stat(): Promise<FsEntry> {
    return this.#call<FsEntry>((id) => ({ t: 'stat', id }))
  }

  truncate(size: number): Promise<void> {
    const p = this.#call<null>((id) => ({ t: 'truncate', id, size }))
    return p.then(() => {
      if (this.flags.write && this.#d.mode !== 'put' && this.#d.mode !== 'read') this.#size = size
    })
  }

  /** The file as this handle writes it, or null when it does not write it (yet). */
  written(): FsEntry | null {
    if (this.#size === null || this.#state === 'done') return null
    const name = this.path.slice(this.path.lastIndexOf('/') + 1)
    return { path: this.path, name, kind: 'file', size: this.#size, mtimeMs: Date.now(), mode: this.#d.initial?.mode ?? null }
  }

  close(): Promise<void> {
    if (this.#closing) return this.#closing
    // A file only read that failed with EIO (its worker died, and it could not go on
    // elsewhere) has nothing to commit: its close is no failure (its reads told the error),
    // as a client closing after a failed read expects.
    if (this.#state === 'done' && this.#d.mode === 'read' && this.#error?.code === 'EIO') return Promise.resolve()
    if (this.#state === 'done') return Promise.reject(this.#error ?? closedError(this.path))
    const done = this.#call<null>((id) => ({ t: 'close', id }), true)
    this.#state = 'closing'
    this.#closing = done.then(
      () => {
        this.#end()
      },
      (err: unknown) => {
        this.#error ??= asFsError(err)
        this.#end()
        throw asFsError(err)
      },
    )
    return this.#closing
  }

  abort(): void {
    if (this.#state === 'done') return
    this.#error ??= new FsError('ECANCELED', 'the file was closed without saving', { path: this.path })
    this.#batch = null
    this.#post({ t: 'abort' })
    this.#end()
  }

  #usable(): boolean {
    return this.#state === 'open' && this.#error === null
  }

  #call<V>(msg: (id: number) => ToHandle, closing = false): Promise<V> {
    if (!this.#usable() && !(closing && this.#state === 'open')) return Promise.reject(this.#error ?? closedError(this.path))
    this.#flush()
    const id = this.#nextId++
    const m = msg(id)
    return new Promise<V>((resolve, reject) => {
      this.#calls.set(id, { resolve: resolve as (v: unknown) => void, reject, msg: m })
      if (this.#actor) this.#post(m)
      else this.#resume()
    })
  }

  #flush(): void {
    const b = this.#batch
    if (!b || b.buf.bytes === 0) return
    this.#batch = null
    const data = b.buf.take()
    this.#send({ t: 'write', offset: b.offset, data, give: false }, data.byteLength, b.waiters, wholeBuffer(data) ? [data.buffer as ArrayBuffer] : [])
  }

  #send(m: ToHandle, bytes: number, waiters: Batch['waiters'], transfer: Transferable[]): void {
    this.#sent.push({ bytes, waiters })
    this.#post(m, transfer)
  }

  #post(m: ToHandle, transfer: Transferable[] = []): void {
    try {
      this.#actor?.port.postMessage(m, transfer)
    } catch {
      // The port is closed: the actor went; `#lost` tells every waiter.
    }
  }

  #attach(actor: HandleActor): void {
    this.#actor = actor
    actor.port.on('message', (m: FromHandle) => this.#onMessage(m))
    actor.port.once('close', () => this.#lost(actor, new FsError('EIO', 'the worker handling this file stopped')))
    this.#watch = actor.thread.watch((err) => this.#lost(actor, err))
  }

  #onMessage(m: FromHandle): void {
    switch (m.t) {
      case 'done': {
        this.#setFigures(m.figures)
        const w = this.#calls.get(m.id)
        this.#calls.delete(m.id)
        if (m.reply.ok) w?.resolve(m.reply.value)
        else w?.reject(fromWire(m.reply.error))
        return
      }
      case 'taken': {
        this.#setFigures(m.figures)
        const s = this.#sent.shift()
        if (!s) return
        this.#settle(s.bytes)
        const err = m.error ? fromWire(m.error) : null
        for (const w of s.waiters) (err ? w.reject(err) : w.resolve())
        return
      }
      case 'figures':
        this.#setFigures(m.figures)
        return
      case 'hold': {
        const { id, grow } = m
        let hold: StagingHold | null = null
        try {
          hold = this.#hold ??= this.#d.hold?.() ?? null
        } catch {
          hold = null
        }
        if (!hold) return this.#post({ t: 'held', id })
        hold.grow(grow).then(
          () => this.#post({ t: 'held', id }),
          (err: unknown) => this.#post({ t: 'held', id, error: toWire(asFsError(err)) }),
        )
        return
      }
      case 'holdSize':
        this.#hold?.setTo(m.size)
        return
      case 'holdRelease':
        this.#hold?.release()
        return
      case 'staged':
        this.#staged = m.name
        return
    }
  }

  #setFigures(f: HandleFigures): void {
    this.#figures = f
    const actor = this.#actor
    if (this.#state === 'done' || actor === null) return
    const live = f.liveReadStreams > 0 || f.uploading
    if (live && !this.#live) {
      try {
        const lease = actor.thread.lease((err) => this.#lost(actor, err))
        this.#live = () => lease.release()
      } catch {
        // The thread has its fill of transfers: this one goes on uncounted.
      }
    } else if (!live && this.#live) {
      this.#live()
      this.#live = null
    }
  }

  #settle(bytes: number): void {
    this.#inflight -= bytes
    this.#d.budget.add(-bytes)
    const ws = this.#roomWaiters
    this.#roomWaiters = []
    for (const w of ws) w()
  }

  /** `actor`'s thread died (its port closed, or the pool told). */
  #lost(actor: HandleActor, err: FsError): void {
    if (actor !== this.#actor || this.#state === 'done') return
    // Its thread's transfers and watches go with it (the pool removes the upload's
    // temporary file before it drops the watch).
    this.#actor = null
    this.#watch = null
    this.#live?.()
    this.#live = null
    actor.port.removeAllListeners('message')
    setImmediate(() => actor.port.close())
    this.#before.readStreams += this.#figures.readStreams
    this.#before.uploadChunks += this.#figures.uploadChunks
    this.#figures = NO_FIGURES
    if (this.#d.mode === 'read' && this.#d.reopen) return this.#resume()
    // A file that writes: nothing is committed.
    this.#error ??= err
    if (this.#staged !== null) this.#d.unstage(this.#staged)
    this.#end()
  }

  /**
   * A file only read, with no actor: its calls go to a new one, opened on a live thread
   * at the first call (the ones in flight when its thread died included). A close alone
   * needs none: there is nothing to commit.
   */
  #resume(): void {
    if (this.#state === 'done' || this.#actor !== null || this.#reopening || this.#calls.size === 0) return
    if ([...this.#calls.values()].every((c) => c.msg.t === 'close')) {
      for (const c of this.#calls.values()) c.resolve({})
      this.#calls.clear()
      return
    }
    if (this.#reopens >= MAX_REOPENS) {
      return this.#fail(new FsError('EIO', `${this.path}: the worker reading this file stopped ${this.#reopens + 1} times; open it again to retry`, { path: this.path }))
    }
    this.#reopens++
    this.#reopening = true
    this.#d.reopen!().then(
      ({ actor, entry }) => {
        this.#reopening = false
        if (this.#state === 'done') return discard(actor)
        if (!sameFile(this.#d.initial, entry)) {
          discard(actor)
          return this.#fail(changed(this.path))
        }
        this.#attach(actor)
        for (const c of this.#calls.values()) this.#post(c.msg)
      },
      (err: unknown) => {
        this.#reopening = false
        const e = asFsError(err)
        // Gone, or no longer a file: changed as well.
        this.#fail(e.code === 'ENOENT' || e.code === 'EISDIR' || e.code === 'ENOTDIR' ? changed(this.path) : e)
      },
    )
  }

  #fail(err: FsError): void {
    if (this.#state === 'done') return
    this.#error ??= err
    this.#end()
  }

  #end(): void {
    if (this.#state === 'done') return
    this.#state = 'done'
    const err = this.#error ?? closedError(this.path)
    for (const c of this.#calls.values()) {
      // A file only read has nothing to commit: a close waiting behind its reads is done.
      if (c.msg.t === 'close' && this.#d.mode === 'read') c.resolve({})
      else c.reject(err)
    }
    this.#calls.clear()
    for (const s of this.#sent.splice(0)) for (const w of s.waiters) w.reject(err)
    for (const w of this.#batch?.waiters ?? []) w.reject(err)
    this.#batch = null
    this.#settle(this.#inflight)
    this.#hold?.release()
    const live = this.#live
    this.#live = null
    const actor = this.#actor
    const watch = this.#watch
    this.#watch = null
    if (actor === null) {
      // Its actor went with its thread: nothing more to wait for.
      live?.()
    } else {
      // The actor closes the port once what the file started in the storage is over (an
      // aborted upload's temporary file removed): the file counts as a transfer, and the
      // pool keeps watch over it, until then. A guard closes it from here should that never come.
      actor.port.removeAllListeners('message')
      const guard = setTimeout(() => actor.port.close(), SETTLE_GUARD_MS).unref()
      actor.port.once('close', () => {
        clearTimeout(guard)
        live?.()
        watch?.release()
      })
    }
    this.#d.onEnd(this.figures)
  }
}

/** Whether a file opened again is the one the handle opened: the same size and mtime. */
function sameFile(was: Entry | null, now: Entry | null): boolean {
  return was !== null && now !== null && now.kind === 'file' && now.size === was.size && now.mtimeMs === was.mtimeMs
}

const changed = (path: string): FsError =>
  new FsError('EIO', `${path}: the worker reading this file stopped, and the file changed since it was opened (or is gone); open it again to read what it holds now`, { path })

/** An actor opened for nothing: it ends and commits nothing. */
function discard(actor: HandleActor): void {
  try {
    actor.port.postMessage({ t: 'abort' } satisfies ToHandle)
  } catch {
    // Closed already.
  }
  actor.port.close()
}

const closedError = (path: string): FsError => new FsError('EINVAL', 'the file is closed', { path })

function wholeBuffer(data: Uint8Array): boolean {
  return data.byteOffset === 0 && data.buffer instanceof ArrayBuffer && data.byteLength === data.buffer.byteLength
}
