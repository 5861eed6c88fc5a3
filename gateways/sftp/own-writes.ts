/**
 * @module gateways/sftp/own-writes
 * What one SFTP session sees of the files it is writing. A file open for writing is
 * committed at CLOSE: other sessions and doors see the old content (or nothing) until
 * then. Its own session sees it from OPEN on, as a local file system would, because
 * clients rely on it: sshfs sends OPEN and STAT of a new file back to back, and sends
 * CLOSE without waiting for its answer before the next OPEN or RENAME of the same name.
 * - A request naming a path waits for this session's OPEN and CLOSE of that path that
 *   came before it (requests otherwise run side by side).
 * - While the file is open, STAT and LSTAT answer it as written so far, SETSTAT goes to
 *   its handle, a listing of its folder shows it, and an OPEN for reading gets a handle
 *   whose reads wait for the writer's CLOSE (bounded: `READ_WAIT_MS`), then read what
 *   was committed.
 */
import { FsError } from '../../core/errors.js'
import { parentOf } from '../../core/paths.js'
import type { FileHandle, FsEntry, OpenFlags } from '../../core/view.js'

/** How long a read of a file this session is writing waits for the writer's CLOSE. */
export const READ_WAIT_MS = 30_000

/** One OPEN for writing, from its arrival to the end of its handle. */
export class OwnWrite<T> {
  readonly path: string
  /** The handle's state once OPEN has answered; null when the OPEN failed. */
  readonly opened: Promise<T | null>
  /** Settles when the handle is gone (committed, failed or aborted). */
  readonly ended: Promise<void>
  /** Set when CLOSE starts: settles once the commit is over (either way). */
  closing: Promise<void> | null = null
  over = false
  #open!: (v: T | null) => void
  #end!: () => void

  constructor(path: string) {
    this.path = path
    this.opened = new Promise((resolve) => (this.#open = resolve))
    this.ended = new Promise((resolve) => (this.#end = resolve))
  }

  /** The OPEN answered (`state`) or failed (null). */
  settleOpen(state: T | null): void {
    this.#open(state)
    if (state === null) this.end()
  }

  end(): void {
    this.over = true
    this.#end()
  }
}

export class OwnWrites<T> {
  /** The latest OPEN for writing of each path. */
  readonly #latest = new Map<string, OwnWrite<T>>()

  /** Registers an OPEN for writing as it arrives (before anything is awaited). */
  begin(path: string): OwnWrite<T> {
    const w = new OwnWrite<T>(path)
    this.#latest.set(path, w)
    void w.ended.then(() => {
      if (this.#latest.get(path) === w) this.#latest.delete(path)
    })
    return w
  }

  /** Taken as a request arrives: what it must wait for (see `settle`). */
  before(path: string): OwnWrite<T> | undefined {
    return this.#latest.get(path)
  }

  /**
   * Waits for the OPEN (and a CLOSE in progress) taken by `before`; the handle's state
   * when the file is still open for writing in this session, else null.
   */
  static async settle<T>(w: OwnWrite<T> | undefined): Promise<T | null> {
    if (w === undefined) return null
    const state = await w.opened
    if (w.closing) await w.closing
    return w.over || w.closing ? null : state
  }

  /** Every OPEN for writing in `dir` (taken when a listing starts). */
  inDir(dir: string): OwnWrite<T>[] {
    const found: OwnWrite<T>[] = []
    for (const w of this.#latest.values()) if (parentOf(w.path) === dir && w.path !== dir) found.push(w)
    return found
  }
}

/** What a reader waits for of a writer. */
type Ended = Pick<OwnWrite<unknown>, 'ended' | 'over'>

/**
 * A handle opened for reading a file this session is writing: it stats as the writer
 * does, and its first read waits for the writer to end, then opens the committed file.
 */
export class ReadAfterWrite implements FileHandle {
  readonly path: string
  readonly flags: OpenFlags
  readonly #writer: FileHandle
  readonly #own: Ended
  readonly #open: () => Promise<FileHandle>
  readonly #waitMs: number
  #real: Promise<FileHandle> | null = null
  /** The committed file's handle, once open. */
  #handle: FileHandle | null = null
  #aborted = false

  constructor(path: string, flags: OpenFlags, writer: FileHandle, own: Ended, open: () => Promise<FileHandle>, waitMs = READ_WAIT_MS) {
    this.path = path
    this.flags = flags
    this.#writer = writer
    this.#own = own
    this.#open = open
    this.#waitMs = waitMs
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    return (await this.#opened()).read(offset, length)
  }

  write(): Promise<void> {
    return Promise.reject(new FsError('EACCES', 'this file was not opened for writing', { path: this.path }))
  }

  truncate(): Promise<void> {
    return this.write()
  }

  async stat(): Promise<FsEntry> {
    if (this.#handle === null && !this.#own.over) return this.#writer.stat()
    return (await this.#opened()).stat()
  }

  async close(): Promise<void> {
    if (this.#handle) return this.#handle.close()
    // Not open yet (maybe waiting for the writer): a reader has nothing to commit.
    this.abort()
  }

  abort(): void {
    this.#aborted = true
    void this.#real?.then((h) => h.abort(), () => {})
  }

  #opened(): Promise<FileHandle> {
    this.#real ??= (async () => {
      await this.#writerEnd()
      const h = await this.#open()
      if (this.#aborted) h.abort()
      else this.#handle = h
      return h
    })()
    return this.#real
  }

  async #writerEnd(): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), this.#waitMs)))
    try {
      if ((await Promise.race([this.#own.ended.then(() => 'ended' as const), late])) === 'late') {
        throw new FsError('ETIMEDOUT', `${this.path} is being written in this session: it can be read once it is closed`, { path: this.path })
      }
    } finally {
      clearTimeout(timer)
    }
  }
}
