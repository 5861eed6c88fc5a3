/**
 * @module workers/handles/handle
 * An open file (core/view.ts `FileHandle`). What it does with writes is chosen at
 * open, from the flags and whether the file exists:
 * - write-only, on a new or truncated file: one atomic upload fed by a write coalescer
 *   (write-coalescer.ts), the common `put`;
 * - any other write (append, resume at the end, random writes, read + write): in place
 *   where the backend can (in-place.ts: atomic per write, not per file), else a private
 *   staging copy (staging.ts), made at the first write (filled with the current content
 *   unless the file is new or truncated), committed atomically at close.
 * Reads come from a read-ahead stream (read-ahead.ts), or from the staging copy once
 * there is one. Calls on one handle are taken one at a time, in the order they come
 * (SFTP clients keep many in flight): reads then see the writes before them.
 */
import type { Entry } from '../../core/driver.js'
import { FsError } from '../../core/errors.js'
import type { FileHandle, FsEntry, OpenFlags } from '../../core/view.js'
import { toFsEntry } from '../../core/view-parts.js'
import { asFsError } from './errors.js'
import type { ReadAhead } from './read-ahead.js'
import { InPlaceWriter } from './in-place.js'
import type { StagingFile } from './staging.js'
import type { WriteCoalescer } from './write-coalescer.js'

/** What a handle needs from its view. */
export interface HandleDeps {
  readonly reader: ReadAhead
  /** The file at open (null: it does not exist yet). */
  readonly initial: Entry | null
  /** A `put` (one upload), in-place writes, or null (read-only, or staging). */
  readonly writer: WriteCoalescer | InPlaceWriter | null
  /** For a staging handle: makes the copy (`withContent`: filled with the current file). */
  readonly stage: ((withContent: boolean) => Promise<StagingFile>) | null
  /** Starts from an empty file (truncate, or a new file): the staging copy starts empty and is committed even unwritten. */
  readonly fresh: boolean
  /** Commits a staging copy. */
  readonly commitStaging: (s: StagingFile) => Promise<Entry>
  /** Sets the file's size in the backend (for in-place writes). */
  readonly truncateNow: (size: number) => Promise<void>
  /** The file's entry now, through the pool. */
  readonly statNow: () => Promise<Entry>
  readonly onEnd: () => void
}


export class Handle implements FileHandle {
  readonly path: string
  readonly flags: OpenFlags
  readonly #d: HandleDeps
  #staging: StagingFile | null = null
  #staged: Promise<StagingFile> | null = null
  /** The staging copy's removal, once an abort asked for it. */
  #discarded: Promise<void> | null = null
  /** Calls run one at a time, in arrival order. */
  #chain: Promise<unknown> = Promise.resolve()
  #state: 'open' | 'closing' | 'done' = 'open'
  #error: FsError | null = null
  #closing: Promise<void> | null = null

  /** Its reader and writer, for the view's figures. */
  get parts(): Pick<HandleDeps, 'reader' | 'writer'> {
    return this.#d
  }

  constructor(path: string, flags: OpenFlags, deps: HandleDeps) {
    this.path = path
    this.flags = flags
    this.#d = deps
  }

  read(offset: number, length: number): Promise<Uint8Array> {
    return this.#run(async () => {
      if (!this.flags.read) throw new FsError('EACCES', 'this file was not opened for reading', { path: this.path })
      checkRange(offset, length, this.path)
      if (length === 0) return new Uint8Array(0)
      // A truncated or new file reads as what was written to it, from its (empty) copy.
      if (this.#staging || (this.flags.write && this.#d.fresh)) return (await this.#stagingCopy()).read(offset, length)
      const w = this.#d.writer
      if (w instanceof InPlaceWriter) {
        // In place: what this handle wrote lands first; a stream opened before it is stale.
        await w.flush()
        if (w.takeDirty()) this.#d.reader.stop()
      }
      return this.#d.reader.read(offset, length)
    })
  }

  write(offset: number, data: Uint8Array, opts: { readonly give?: boolean } = {}): Promise<void> {
    if (this.#d.writer) {
      // Not chained: the coalescer takes writes as they come (in any order) and applies its own backpressure.
      if (!this.#usable()) return Promise.reject(this.#error ?? closedError(this.path))
      checkRange(offset, data.byteLength, this.path)
      const at = this.flags.append ? this.#d.writer.size : offset
      return this.#d.writer.write(at, data, opts.give === true).catch((err: unknown) => {
        throw asFsError(err)
      })
    }
    return this.#run(async () => {
      if (!this.flags.write) throw new FsError('EACCES', 'this file was not opened for writing', { path: this.path })
      checkRange(offset, data.byteLength, this.path)
      const s = await this.#stagingCopy()
      await s.write(this.flags.append ? s.size : offset, data)
    })
  }

  stat(): Promise<FsEntry> {
    return this.#run(async () => this.written() ?? toFsEntry(await this.#d.statNow()))
  }

  truncate(size: number): Promise<void> {
    const w = this.#d.writer
    if (w && !(w instanceof InPlaceWriter)) {
      // One upload in order: the bytes sent cannot be taken back, nor zeros added ahead of time.
      if (!this.#usable()) return Promise.reject(this.#error ?? closedError(this.path))
      if (size === w.size) return Promise.resolve()
      return Promise.reject(
        new FsError('ENOTSUP', `${this.path}: a file being uploaded keeps the size written so far (${w.size} bytes) until it is closed; set another size once it is closed`, { path: this.path }),
      )
    }
    return this.#run(async () => {
      if (!this.flags.write) throw new FsError('EACCES', 'this file was not opened for writing', { path: this.path })
      checkRange(size, 0, this.path)
      if (w instanceof InPlaceWriter) {
        // Every write before it lands first, then the file is cut in place (atomically).
        await w.flush()
        if (size === w.size) return
        await this.#d.truncateNow(size)
        w.resized(size)
        return
      }
      await (await this.#stagingCopy()).truncate(size)
    })
  }

  /** The file as this handle writes it, or null when it does not write it (yet). */
  written(): FsEntry | null {
    const size = this.#d.writer?.size ?? this.#staging?.size ?? (this.flags.write && this.#d.fresh ? 0 : null)
    if (size === null || this.#state === 'done') return null
    const name = this.path.slice(this.path.lastIndexOf('/') + 1)
    return { path: this.path, name, kind: 'file', size, mtimeMs: Date.now(), mode: this.#d.initial?.mode ?? null }
  }

  close(): Promise<void> {
    if (this.#closing) return this.#closing
    // Aborted (the connection went, or the view closed): nothing was committed, say so.
    if (this.#state === 'done') return Promise.reject(this.#error ?? closedError(this.path))
    this.#state = 'closing'
    const done = this.#chain.then(async (): Promise<void> => {
      if (this.#error) throw this.#error
      this.#d.reader.close()
      if (this.#d.writer) await this.#d.writer.close()
      else if (this.flags.write && (this.#staging || this.#staged || this.#d.fresh)) await this.#d.commitStaging(await this.#stagingCopy())
    })
    const finish = done.then(
      () => this.#end(),
      (err: unknown) => {
        this.#abortParts(asFsError(err))
        this.#end()
        throw asFsError(err)
      },
    )
    this.#closing = finish
    return finish
  }

  /**
   * Resolves once what the handle started in the storage is over (an upload finished or
   * cancelled with its temporary file removed, the staging copy removed): until then an
   * aborted file may still show a temporary file.
   */
  settled(): Promise<void> {
    const w = this.#d.writer
    return Promise.all([w && 'settled' in w ? w.settled() : undefined, this.#discarded]).then(() => {})
  }

  abort(): void {
    if (this.#state === 'done') return
    this.#abortParts(new FsError('ECANCELED', 'the file was closed without saving', { path: this.path }))
    this.#end()
  }

  #abortParts(err: FsError): void {
    this.#error ??= err
    this.#d.reader.close()
    this.#d.writer?.abort(err)
    this.#discarded = this.#staged?.then((s) => s.discard(), () => {}).then(() => {}, () => {}) ?? null
  }

  #end(): void {
    if (this.#state === 'done') return
    this.#state = 'done'
    this.#d.onEnd()
  }

  #usable(): boolean {
    return this.#state === 'open' && this.#error === null
  }

  #stagingCopy(): Promise<StagingFile> {
    this.#staged ??= this.#d.stage!(!this.#d.fresh).then((s) => {
      this.#staging = s
      if (this.#state === 'done') void s.discard()
      return s
    })
    return this.#staged
  }

  #run<T>(fn: () => Promise<T>): Promise<T> {
    if (!this.#usable()) return Promise.reject(this.#error ?? closedError(this.path))
    const p = this.#chain.then(fn)
    this.#chain = p.catch(() => {})
    return p.catch((err: unknown) => {
      throw asFsError(err)
    })
  }
}

const closedError = (path: string): FsError => new FsError('EINVAL', 'the file is closed', { path })

function checkRange(offset: number, length: number, path: string): void {
  if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(length) || length < 0) {
    throw new FsError('EINVAL', 'an offset and a length are whole numbers of bytes', { path })
  }
}
