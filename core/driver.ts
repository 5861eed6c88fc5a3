/**
 * @module core/driver
 * The one storage driver interface. Every backend implements it; the same
 * conformance suite (test/drivers/suite.ts) runs against each implementation,
 * and against the worker pool's RemoteDriver. The doc comments are the spec.
 *
 * Paths are canonical (core/paths.ts): `/` is the driver's root. Drivers never
 * see client input. Operations that a backend cannot do natively (recursive
 * delete, mkdir -p, rename by copy) are built once above the drivers, in
 * workers/ops.ts; callers branch on `features` or on a method's presence, never
 * on `kind`.
 */

/** Per-call context; always the first parameter. */
export interface OpContext {
  /** Aborted when the caller goes away: the driver stops and releases its session. */
  readonly signal: AbortSignal
  readonly requestId: string
  /**
   * Told the storage path of each temporary file the op is about to create (an upload's
   * hidden `.part`), before it exists: the pool removes it if the thread dies mid-op.
   */
  readonly temp?: (path: string) => void
}

export type EntryKind = 'file' | 'dir'

export interface Entry {
  /** Canonical path of the entry. */
  readonly path: string
  /** Last path segment ('' for the root). */
  readonly name: string
  readonly kind: EntryKind
  /** Bytes; 0 for directories. */
  readonly size: number
  /** Modification time in ms since the epoch; null when the backend cannot tell. */
  readonly mtimeMs: number | null
  /**
   * Reached through a symbolic link (the other fields describe its target). Walks
   * (recursive delete, zip) never descend into a linked directory: removing a link
   * removes the link only, and link cycles cannot trap a walk.
   */
  readonly link?: boolean
  /** Permission bits (`st_mode & 0o7777`), where the backend keeps them. */
  readonly mode?: number
  /** The store's own entity tag of a file (S3's ETag, unquoted), where it keeps one. */
  readonly etag?: string
}

/** A file system's size and free space (statvfs), in bytes and files. */
export interface Space {
  /** Block size the figures below count in (f_frsize). */
  readonly blockSize: number
  readonly totalBytes: number
  readonly freeBytes: number
  /** Free for an unprivileged user. */
  readonly availableBytes: number
  readonly totalFiles: number
  readonly freeFiles: number
  /** Longest name, in bytes. */
  readonly maxNameBytes: number
}

/** Static traits of a backend. */
export interface Features {
  /** An empty directory exists on its own (false for prefix stores like S3). */
  readonly emptyDirs: boolean
  /** `rename` replaces atomically. */
  readonly atomicRename: boolean
  /** `read` honours a range without reading the bytes before it. */
  readonly rangeRead: boolean
  /** Granularity of stored modification times, null when not kept. */
  readonly mtimePrecisionMs: number | null
  /**
   * Characters a name on this storage cannot hold, beyond what every door refuses
   * (control characters, core/paths.ts); '' when it holds the rest. A path with one is
   * refused with EINVAL before the driver sees it (core/paths.ts `checkStorable`).
   * Optional so that a plugin's storage written before it existed keeps working: absent
   * is ''.
   */
  readonly refusedNameChars?: string
}

/** Inclusive byte range, like HTTP's Range: `end` absent means to the end of the file. */
export interface ByteRange {
  readonly start: number
  readonly end?: number
}

/** What an object store keeps beside a file's bytes (S3's Content-Type and `x-amz-meta-*`). */
export interface ObjectMetadata {
  readonly contentType?: string
  /** Names without `x-amz-meta-`, lower case. */
  readonly userMeta: Readonly<Record<string, string>>
}

/** An object's metadata as the store keeps it, with the store's own entity tag. */
export interface StoredMetadata extends ObjectMetadata {
  /** The store's ETag, unquoted (S3: the MD5, or md5-of-md5s `-N` for multipart objects). */
  readonly etag: string
}

export interface WriteOptions {
  /** Expected byte count, when the client announced it. */
  readonly size?: number
  /** When false and the target exists: EEXIST, and nothing is written. Default true. */
  readonly overwrite?: boolean
  /** Modification time to set on the result. */
  readonly mtimeMs?: number
  /** Kept with the object where the driver has `metadata`; ignored elsewhere. */
  readonly metadata?: ObjectMetadata
}

export interface Driver {
  /** Backend type, for logs and figures only: never branch on it. */
  readonly kind: string
  readonly features: Features

  /** @throws FsError ENOENT when nothing is there; EACCES when it leads outside the root. */
  stat(ctx: OpContext, path: string): Promise<Entry>

  /**
   * Entries of a directory, in pages, in no set order; the directory itself is not included.
   * @throws FsError ENOENT | ENOTDIR
   */
  list(ctx: OpContext, dir: string): AsyncIterable<readonly Entry[]>

  /**
   * The file's bytes (or the range of them). Each yielded chunk belongs to the consumer,
   * which may transfer it to another thread: the driver never reuses its memory. Stopping
   * the iteration early (`return()`) releases whatever the read holds.
   * @throws FsError ENOENT | EISDIR
   */
  read(ctx: OpContext, path: string, range?: ByteRange): AsyncIterable<Uint8Array>

  /**
   * Writes `body` to `path`, replacing it atomically: readers see the old content or the
   * new, never a part. The parent directory must exist (ENOENT otherwise). If `body`
   * throws or `ctx.signal` aborts, the old file (or nothing) remains and no temporary
   * object is left behind.
   * @throws FsError ENOENT | EISDIR | EEXIST (with overwrite false)
   */
  write(ctx: OpContext, path: string, body: AsyncIterable<Uint8Array>, opts?: WriteOptions): Promise<Entry>

  /**
   * Makes a file of the server's own disk (`file`, an absolute path outside the root: a
   * staged upload's, workers/staged/commit.ts) the content of `path` without copying its
   * bytes, atomically and with the rules of `write` (the parent must exist; `overwrite`).
   * The file keeps its own name as well (its owner removes it). Missing, or ENOTSUP (the
   * file lies on another file system...): the bytes are written with `write` instead.
   * @throws FsError ENOTSUP | ENOENT | EISDIR | EEXIST (with overwrite false)
   */
  adopt?(ctx: OpContext, path: string, file: string, opts?: WriteOptions): Promise<Entry>

  /** Creates one directory; no error when it already exists as a directory. @throws ENOENT (parent) | EEXIST (a file) */
  mkdir(ctx: OpContext, dir: string): Promise<void>

  /** Removes a file or an empty directory. @throws ENOENT | ENOTEMPTY */
  remove(ctx: OpContext, path: string): Promise<void>

  /**
   * Removes a file, or a directory with everything under it, in bulk (S3: DeleteObjects,
   * 1000 keys a request). Missing: workers/ops.ts walks the tree with `remove`.
   * @throws FsError ENOENT
   */
  removeTree?(ctx: OpContext, path: string): Promise<void>

  /**
   * Renames within this backend. With `overwrite` a file target is replaced; otherwise an
   * existing target is EEXIST. Missing method: workers/ops.ts copies and removes.
   */
  rename?(ctx: OpContext, from: string, to: string, opts: { overwrite: boolean }): Promise<void>

  /** Sets the modification time. Missing method: mtimes are not settable. */
  setMtime?(ctx: OpContext, path: string, mtimeMs: number): Promise<void>

  /**
   * The entry itself, not following a final symbolic link. A link is reported with
   * `link: true`, `kind: 'file'` and its own size and times, once its target is known to
   * lie inside the root (EACCES otherwise). Missing: `stat` (backends without links).
   * @throws FsError ENOENT | EACCES
   */
  lstat?(ctx: OpContext, path: string): Promise<Entry>

  /**
   * Sets the permission bits (`mode & 0o7777`; a backend may keep fewer, e.g. local folders
   * never set the set-user-ID, set-group-ID and sticky bits) of a file or directory.
   * Missing: modes are not settable.
   */
  setMode?(ctx: OpContext, path: string, mode: number): Promise<void>

  /**
   * Cuts or extends (with zeros) a file to `size` bytes in one step. Missing: workers/ops.ts
   * rewrites the file atomically. @throws FsError ENOENT | EISDIR
   */
  truncate?(ctx: OpContext, path: string, size: number): Promise<void>

  /**
   * Writes `data` at `offset` into an existing file, in place: not atomic (a reader may
   * see the file between two such writes), a hole before `offset` reads as zeros. What
   * the protocol gateways use for appends and random writes where a backend can.
   * Missing: they go through a staging copy. @throws FsError ENOENT | EISDIR
   */
  writeAt?(ctx: OpContext, path: string, offset: number, data: Uint8Array): Promise<void>

  /**
   * Size and free space of the file system holding `path` (what `df` shows). Missing: the
   * backend does not tell (ENOTSUP). @throws FsError ENOENT
   */
  space?(ctx: OpContext, path: string): Promise<Space>

  /**
   * Copies one file inside the backend (the bytes never leave it), atomically as `write`.
   * The target's parent must exist. Missing: workers/ops.ts streams read → write.
   * @throws FsError ENOENT | EISDIR | EEXIST (with overwrite false)
   */
  copy?(ctx: OpContext, from: string, to: string, opts: { overwrite: boolean }): Promise<Entry>

  /**
   * The metadata an object store keeps with a file (written with `WriteOptions.metadata`,
   * or by any other client of the store). Missing: the backend keeps none.
   * @throws FsError ENOENT | EISDIR
   */
  metadata?(ctx: OpContext, path: string): Promise<StoredMetadata>

  /** Releases every session this driver holds. */
  close(): Promise<void>
}
