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
 * (core/staging-quota.ts), as the actor asks (`hold`). The handle ends at close, at
 * abort (the connection or the view went: nothing committed), or when its worker thread
 * dies (EIO; a staging copy it left is removed by another thread).
 */
import type { MessagePort, Transferable } from 'node:worker_threads'
import { ChunkBuffer } from '../../core/chunk-buffer.js'
import type { Entry } from '../../core/driver.js'
import { FsError, fromWire, toWire } from '../../core/errors.js'
import type { FromHandle, HandleFigures, HandleMode, ToHandle } from '../../core/messages.js'
import type { PendingBudget } from '../../core/pending-budget.js'
import type { CloseResult, FileHandle, FsEntry, OpenFlags } from '../../core/view.js'
import type { StagingHold } from '../../core/staging-quota.js'
import { asFsError } from './errors.js'

/** How long an ended file waits for its actor to close the port before closing it itself. */
const SETTLE_GUARD_MS = 60_000

/** Small writes joined into one message up to this many bytes. */
export const BATCH_BYTES = 256 * 1024


export interface FileHandleDeps {
  readonly port: MessagePort
  readonly initial: Entry | null
  readonly mode: HandleMode
  readonly windowBytes: number
  readonly budget: PendingBudget
  /** Makes the staging copy's hold, the first time the actor asks to charge bytes (absent: no bounds). */
  readonly hold?: () => StagingHold
  /** Removes the staging copy `name` (its thread died). */
  readonly unstage: (name: string) => void
  /**
   * Counts a live read-ahead stream or upload as a transfer on the actor's thread while it
   * lasts (workers/pool.ts); returns its release. @throws when that thread has its fill
   */
  readonly live?: () => () => void
  /** `lost`: ended because its actor went (its thread died), not by close or abort. */
  readonly onEnd: (figures: HandleFigures, lost: boolean) => void
}

interface Batch {
  readonly offset: number
  readonly buf: ChunkBuffer
  readonly waiters: { resolve(): void; reject(err: unknown): void }[]
}

type Waiter = { resolve(v: unknown): void; reject(err: unknown): void }

export class ProxyHandle implements FileHandle {
  readonly path: string
  readonly flags: OpenFlags
  readonly #d: FileHandleDeps
  readonly #port: MessagePort
  #figures: HandleFigures = { readStreams: 0, liveReadStreams: 0, uploadChunks: 0, uploading: false }
  /** Releases the transfer counted while a stream or upload is live. */
  #live: (() => void) | null = null
  #state: 'open' | 'closing' | 'done' = 'open'
  #error: FsError | null = null
  #closing: Promise<CloseResult> | null = null
  #nextId = 1
  /** Calls awaiting their answer, by id. */
  readonly #calls = new Map<number, Waiter>()
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
    this.#port = deps.port
    const fresh = flags.write && (deps.initial === null || flags.truncate)
    this.#size = deps.mode === 'put' || (deps.mode === 'staging' && fresh) ? 0 : deps.mode === 'inPlace' ? deps.initial!.size : null
    this.#port.on('message', (m: FromHandle) => this.#onMessage(m))
    this.#port.once('close', () => this.#lost(new FsError('EIO', 'the worker handling this file stopped')))
  }

  /** What the actor last told of its read-ahead and chunks. */
  get figures(): HandleFigures {
    return this.#figures
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

  close(): Promise<CloseResult> {
    if (this.#closing) return this.#closing
    // A file only read whose worker died has nothing to commit: its close is no failure
    // (its reads told the error), as a client closing after a failed read expects.
    if (this.#state === 'done' && this.#d.mode === 'read' && this.#error?.code === 'EIO') return Promise.resolve({})
    if (this.#state === 'done') return Promise.reject(this.#error ?? closedError(this.path))
    const done = this.#call<CloseResult>((id) => ({ t: 'close', id }), true)
    this.#state = 'closing'
    this.#closing = done.then(
      (r) => {
        this.#end()
        return r
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
    return new Promise<V>((resolve, reject) => {
      this.#calls.set(id, { resolve: resolve as (v: unknown) => void, reject })
      this.#post(msg(id))
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
      this.#port.postMessage(m, transfer)
    } catch {
      // The port is closed: the actor went; `#lost` tells every waiter.
    }
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
    if (this.#state === 'done') return
    const live = f.liveReadStreams > 0 || f.uploading
    if (live && !this.#live && this.#d.live) {
      try {
        this.#live = this.#d.live()
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

  /** The actor's port closed under an open handle: its thread died. */
  #lost(err: FsError): void {
    if (this.#state === 'done') return
    this.#error ??= err
    if (this.#staged !== null) this.#d.unstage(this.#staged)
    this.#end(true)
  }

  /** Called by the view when the actor's thread died. */
  lost(err: FsError): void {
    this.#lost(err)
  }

  #end(lost = false): void {
    if (this.#state === 'done') return
    this.#state = 'done'
    const err = this.#error ?? closedError(this.path)
    for (const w of this.#calls.values()) w.reject(err)
    this.#calls.clear()
    for (const s of this.#sent.splice(0)) for (const w of s.waiters) w.reject(err)
    for (const w of this.#batch?.waiters ?? []) w.reject(err)
    this.#batch = null
    this.#settle(this.#inflight)
    this.#hold?.release()
    const live = this.#live
    this.#live = null
    this.#port.removeAllListeners('message')
    if (lost) {
      live?.()
      setImmediate(() => this.#port.close())
    } else {
      // The actor closes the port once what the file started in the storage is over (an
      // aborted upload's temporary file removed): the file counts as a transfer until then.
      // A guard closes it from here should that never come.
      const guard = setTimeout(() => this.#port.close(), SETTLE_GUARD_MS).unref()
      this.#port.once('close', () => {
        clearTimeout(guard)
        live?.()
      })
    }
    this.#d.onEnd(this.#figures, lost)
  }
}

const closedError = (path: string): FsError => new FsError('EINVAL', 'the file is closed', { path })

function wholeBuffer(data: Uint8Array): boolean {
  return data.byteOffset === 0 && data.buffer instanceof ArrayBuffer && data.byteLength === data.buffer.byteLength
}
