/**
 * @module core/view-parts
 * What a view's calls (core/view.ts) take and give that the worker messages
 * (core/messages.ts) name too: entries, listing pages, open flags, open files, what a
 * storage can do. Its own file so that the view, which names the messages' streams, and
 * the messages share these without a cycle.
 */
import type { Entry, ObjectMetadata } from './driver.js'

/** An entry, with its permission bits where the backend keeps them. */
export interface FsEntry extends Omit<Entry, 'mode'> {
  /** Permission bits (e.g. 0o644), or null when the backend has none. */
  readonly mode: number | null
}

/** A driver's entry as a view gives it. */
export const toFsEntry = (e: Entry): FsEntry => ({ ...e, mode: e.mode ?? null })

/** One page of a directory listing. */
export interface ListPage {
  /** In UTF-8 byte order of their names (what S3 listings need; SFTP takes any order). */
  readonly entries: readonly FsEntry[]
  /** Pass back to get the next page; null: this was the last. Opaque to the caller. */
  readonly cursor: string | null
}

/** How a file is opened (SFTP's pflags; S3 and MCP use the same). */
export interface OpenFlags {
  readonly read: boolean
  readonly write: boolean
  /** Every write lands at the end of the file, whatever offset it names. */
  readonly append: boolean
  /** Create the file when it does not exist. */
  readonly create: boolean
  /** Start from an empty file. */
  readonly truncate: boolean
  /** With `create`: EEXIST when the file exists. */
  readonly exclusive: boolean
}

/** Options of `writeFile`. */
export interface WriteFileOptions {
  /** Without it an existing file is EEXIST. */
  readonly overwrite: boolean
  /** The bytes the body holds (fewer or more is an error, nothing written). */
  readonly size?: number
  /** Object metadata kept with the file where the storage can (`abilities.metadata`); ignored elsewhere. */
  readonly metadata?: ObjectMetadata
  /**
   * The worker that writes the bytes hashes them as they go by and the answer carries the
   * hex digest (S3's ETag), so that the hash costs the caller's thread nothing.
   */
  readonly digest?: 'md5'
  /**
   * The SHA-256 (hex) the body must have: the worker that writes the bytes checks it at
   * the body's end, before anything is committed; another is EINTEGRITY, nothing written.
   */
  readonly sha256?: string
  /**
   * Missing folders are made only below this one, which must exist (ENOENT otherwise);
   * those made for a write that then fails are removed again. Absent: any missing folder
   * on the way is made.
   */
  readonly foldersBelow?: string
}

/** What `writeFile` answers: the file as committed (its size and time as a `stat` would give them). */
export interface WrittenFile extends FsEntry {
  /** Hex digest of the content, when `WriteFileOptions.digest` asked for one. */
  readonly digest?: string
}

/**
 * An open file, kept by the worker that owns the backend (workers/handles/): reads are
 * served from a read-ahead stream there (a seek restarts it); writes are coalesced there
 * into large chunks. A file written
 * from offset 0 is committed atomically at `close`, as HTTP uploads are; other writes go
 * in place where the backend can, else to a private staging copy committed at `close`.
 * Until `close` resolves nothing written is guaranteed; `abort` (a lost connection)
 * commits nothing. An idle handle holds no pool task, no backend session and no buffers
 * beyond a small cap.
 */
export interface FileHandle {
  readonly path: string
  readonly flags: OpenFlags
  /** Up to `length` bytes from `offset`; fewer only at the end of the file; empty at or past it. */
  read(offset: number, length: number): Promise<Uint8Array>
  /**
   * An error of a write that was coalesced may surface at a later write or at `close`.
   * `give`: the caller gives `data` away and never touches it again (an HTTP body's
   * chunk), so a large one may be moved to the worker as it is, without a copy.
   */
  write(offset: number, data: Uint8Array, opts?: { readonly give?: boolean }): Promise<void>
  /** The file as this handle sees it (size includes writes not yet committed). */
  stat(): Promise<FsEntry>
  /**
   * Sets the size of the file this handle writes (cut, or extended with zeros). A file
   * written as one upload in order (new or truncated, opened for writing only) can only
   * keep the size written so far. @throws EACCES (not open for writing) | ENOTSUP
   */
  truncate(size: number): Promise<void>
  /** Commits what was written (atomically), then releases the handle. */
  close(): Promise<void>
  /** Releases the handle and drops every write not yet committed. Idempotent. */
  abort(): void
}

/** What the storage behind a view can do, so a gateway refuses clearly before trying. */
export interface FsAbilities {
  /** Modification times can be set. */
  readonly setTimes: boolean
  /** Permission bits are kept and can be set. */
  readonly modes: boolean
  /** Copies happen inside the backend, without the bytes coming through filegate. */
  readonly serverSideCopy: boolean
  /** An empty directory exists on its own (false for prefix stores like S3). */
  readonly emptyDirs: boolean
  /** Files keep object metadata (Content-Type, user metadata) and an ETag of the store's own (S3). */
  readonly metadata: boolean
}

