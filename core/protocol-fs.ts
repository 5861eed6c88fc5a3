/**
 * @module core/protocol-fs
 * The file system the protocol gateways (SFTP, S3, MCP) act on: one logged-in
 * user's view of one storage, scoped to that user's root and rights, served by the
 * worker pool. The composition root builds it (gateways/connection/view.ts); gateways get it
 * from a login (core/gateway.ts) and never see threads, drivers or HTTP errors.
 *
 * Unlike `Storage` (shaped for the HTTP API: mkdir -p, recursive remove, parents
 * created), each call here is one protocol operation: one directory made or removed,
 * one file removed, listings in pages, files opened as handles and read or written at
 * offsets.
 *
 * Paths are canonical (the door's own rule, declared in core/paths.ts `DOOR_PATH_RULES`, made them so), `/` being the user's
 * root; nothing can name a place above it. Every failure is an `FsError`
 * (core/errors.ts): each gateway maps its codes to its protocol in one table of its own.
 * A view checks every operation against its login's eight permission bits
 * (core/permissions.ts) before anything reaches a worker, and answers EACCES for what
 * they do not allow: `list`, `metadata` and opening for reading need can_read; `mkdir`
 * can_create_directory; `rmdir` and `unlink` can_delete; `rename` can_rename within a
 * folder, can_move to another; opening for writing can_upload, plus can_create_file for
 * a new file; replacing an existing file's content (writing into it, truncating it,
 * renaming or copying onto it) `mayReplace`; `setTimes` and `setMode` can_upload;
 * `stat`, `lstat` and `space` are always allowed (a client looks before it uploads).
 */
import type { Entry, ObjectMetadata, Space, StoredMetadata } from './driver.js'
import type { Permissions } from './permissions.js'
import type { RequestContext } from './request-context.js'

/** An entry, with its permission bits where the backend keeps them. */
export interface FsEntry extends Omit<Entry, 'mode'> {
  /** Permission bits (e.g. 0o644), or null when the backend has none. */
  readonly mode: number | null
}

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

/** Options of `open`. */
export interface OpenOptions {
  /**
   * For a new or truncated file opened for writing only (one atomic upload): object
   * metadata kept with it where the storage can (`abilities.metadata`); ignored elsewhere.
   */
  readonly metadata?: ObjectMetadata
  /**
   * For a new or truncated file: the worker hashes the bytes it commits and `close`
   * returns the hex digest (S3's ETag), so that the hash costs the caller's thread nothing.
   */
  readonly digest?: 'md5'
}

/** What `close` tells of the file it committed. */
export interface CloseResult {
  /** Hex digest of the file's whole content as committed, when `open` asked for one (`OpenOptions.digest`) and the file was written whole (new or truncated). */
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
  close(): Promise<CloseResult>
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

export interface ProtocolFs {
  /** What the login may do (the module comment says which operation needs which bit). */
  readonly permissions: Permissions
  /**
   * A stable name of the storage and root this view shows (a hash of their non-secret
   * identity: never a credential): views of the same folder of the same storage have the
   * same. What a gateway keys records of its own about files by (e.g. S3 metadata).
   */
  readonly identity: string
  readonly abilities: FsAbilities
  /**
   * Aborted when the view is closed, by its user or from outside (the login it came from
   * is no longer valid: the user was removed, or its password or keys changed); a
   * connection-bound gateway (SFTP) then ends its connection. Absent: never closed from outside.
   */
  readonly ended?: AbortSignal

  /** Follows a symbolic link (inside the root; one leading outside is EACCES). @throws ENOENT */
  stat(ctx: RequestContext, path: string): Promise<FsEntry>
  /** The entry itself; links are reported with `link: true`. @throws ENOENT */
  lstat(ctx: RequestContext, path: string): Promise<FsEntry>
  /**
   * A page of a directory's entries, at most `limit` (default 1000), after `cursor`
   * (null or absent: from the start), or, without a cursor, after the name `after` (UTF-8
   * byte order: where an S3 listing resumes; a snapshot of `dir` this view made in the last
   * seconds serves it). A page costs one backend listing at most.
   * @throws ENOENT | ENOTDIR
   */
  list(ctx: RequestContext, dir: string, opts?: { readonly cursor?: string | null; readonly after?: string; readonly limit?: number }): Promise<ListPage>
  /** One directory; its parent must exist. @throws EEXIST | ENOENT */
  mkdir(ctx: RequestContext, dir: string): Promise<void>
  /** One empty directory. @throws ENOENT | ENOTDIR | ENOTEMPTY | EACCES (the root) */
  rmdir(ctx: RequestContext, dir: string): Promise<void>
  /** One file (never a directory). @throws ENOENT | EISDIR */
  unlink(ctx: RequestContext, path: string): Promise<void>
  /**
   * Renames a file or a directory; the target's parent must exist. Without `overwrite`
   * an existing target is EEXIST; with it a file target is replaced (atomically where the
   * backend can). @throws ENOENT | EEXIST | EINVAL (a directory into itself)
   */
  rename(ctx: RequestContext, from: string, to: string, opts: { readonly overwrite: boolean }): Promise<void>
  /** @throws ENOTSUP when the backend keeps no settable times (`abilities.setTimes`) */
  setTimes(ctx: RequestContext, path: string, times: { readonly mtimeMs: number; readonly atimeMs?: number }): Promise<void>
  /** @throws ENOTSUP when the backend keeps no modes (`abilities.modes`) */
  setMode(ctx: RequestContext, path: string, mode: number): Promise<void>
  /** Cuts or extends (with zeros) a file to `size` bytes, atomically. @throws ENOENT | EISDIR */
  truncate(ctx: RequestContext, path: string, size: number): Promise<void>
  /**
   * Copies one file inside the storage (server-side where `abilities.serverSideCopy`,
   * else streamed through a worker); the result is atomic. @throws ENOENT | EISDIR | EEXIST
   */
  copy(ctx: RequestContext, from: string, to: string, opts: { readonly overwrite: boolean }): Promise<FsEntry>
  /**
   * Opens a file. `ctx.signal` is the handle's life: aborting it aborts the handle
   * (pass the connection's or session's signal, not one request's).
   * @throws ENOENT (no file, no `create`) | EEXIST (`exclusive`) | EISDIR | EACCES
   */
  open(ctx: RequestContext, path: string, flags: OpenFlags, opts?: OpenOptions): Promise<FileHandle>
  /** What the store keeps with a file (`abilities.metadata`). @throws ENOTSUP elsewhere | ENOENT | EISDIR */
  metadata(ctx: RequestContext, path: string): Promise<StoredMetadata>
  /** Size and free space of the storage holding `path` (SFTP's statvfs, `df`). @throws ENOTSUP where the backend does not tell */
  space(ctx: RequestContext, path: string): Promise<Space>
  /** Ends the view (the session closed): every handle still open is aborted. */
  close(): void
}
