/**
 * @module core/view
 * The view: one login's file system, what every door calls (the HTTP API, share links,
 * the SFTP, S3 and MCP gateways, plugins' routes and gateways). It shows one storage from
 * one folder (the login's root, or a share's) with the login's rights, served by the
 * worker pool; the composition root builds it (gateways/connection/view.ts) and doors
 * never see threads, drivers or HTTP errors. What a storage implements is the other
 * interface, `Driver` (core/driver.ts).
 *
 * Each verb says what it does: `mkdir` makes one folder, `makeFolders` one with its
 * missing parents; `unlink` removes one file and `rmdir` one empty folder, `removeTree` a
 * folder with everything in it (one worker task, the driver's bulk delete where it has
 * one); `rename` needs the target's folder, `move` makes it; files are opened as handles
 * and read or written at offsets (`open`), or read as a stream (`readFile`, with a range
 * or a plugin's transform) and written whole and atomically (`writeFile`, or from a
 * staged upload: `commitStaged`).
 *
 * Paths are canonical (the door's own rule, declared in core/paths.ts `DOOR_PATH_RULES`,
 * made them so), `/` being the view's root; nothing can name a place above it, and no
 * error shows a path above it. Every failure is an `FsError` (core/errors.ts): each door
 * maps its codes to its protocol in one table of its own (the HTTP API: EACCES is 403
 * FORBIDDEN, its message naming the missing right).
 *
 * Rights: the view checks every operation against its eight permission bits
 * (core/permissions.ts), the same for every door, before anything reaches a worker, and
 * answers EACCES for what they do not allow:
 *
 * | operation                                    | needs                                           |
 * |----------------------------------------------|-------------------------------------------------|
 * | `stat`, `lstat`, `space`                     | nothing (a client looks before it uploads)      |
 * | `list`, `listAll`, `readFile`, `zip`, `metadata`, `open` for reading | can_read                |
 * | `mkdir`, `makeFolders`                       | can_create_directory                            |
 * | `unlink`, `rmdir`, `removeTree`              | can_delete                                      |
 * | `rename`, `move`                             | can_rename within a folder, can_move to another |
 * | `writeFile`, `commitStaged`, `open` for writing, `copy` | can_upload; a new file also can_create_file |
 * | `touch`                                      | can_create_file                                 |
 * | `truncate`, `setTimes`, `setMode`            | can_upload                                      |
 * | replacing a file's content (writing into it, truncating it, renaming, moving or copying onto it) | `mayReplace`: can_upload and can_delete |
 * | missing folders made on the way (`writeFile`, `commitStaged`, `move`, `touch`) | can_create_directory (without it the folder must exist: ENOENT) |
 *
 * Transfers (a `readFile` that streams, a `writeFile`, a `commitStaged`, a `zip`, a
 * handle that moves a file's bytes) count against the fairness limits of their client
 * (gateways/connection/transfer-limits.ts), once, whatever door they came by.
 */
import type { ObjectMetadata, Space, StoredMetadata } from './driver.js'
import type { RangeSpec, ReadHead, TransformRequest, ZipCompression, ZipHead } from './messages.js'
import type { Permissions } from './permissions.js'
import type { RequestContext } from './request-context.js'
import type { StagedSource } from './staged.js'
import type { FileHandle, FsAbilities, FsEntry, ListPage, OpenFlags, WriteFileOptions, WrittenFile } from './view-parts.js'

export type { FileHandle, FsAbilities, FsEntry, ListPage, OpenFlags, WriteFileOptions, WrittenFile } from './view-parts.js'
/** Who asks and how to cancel: core/request-context.ts. */
export type { ClientIdentity, RequestContext } from './request-context.js'

/** A stream whose metadata (`head`) arrived before its bytes. */
export interface HeadedStream<H> {
  readonly head: H
  /** The bytes; iterate once. Stopping early cancels the transfer. */
  readonly body: AsyncIterable<Uint8Array>
  /** Cancels without reading (e.g. answering 304). Idempotent. */
  cancel(): void
  /** True when the bytes stream from a live transfer; false when they came whole with the answer. */
  readonly live?: boolean
}

export interface View {
  /** What the login may do (the module comment's table says which operation needs which bit). */
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
  /**
   * Every entry of a directory, in the storage's order (the HTTP API's `ls` of a folder
   * answered whole). @throws ENOENT | ENOTDIR
   */
  listAll(ctx: RequestContext, dir: string): Promise<FsEntry[]>
  /**
   * A file's bytes as a stream, from one task: small files (up to 64 KiB) come whole in
   * its answer, larger ones stream. `range`: those bytes only (the head tells whether the
   * range fits the file). `transform`: a plugin's download transform (core/plugin.ts)
   * makes the bytes (no range then). @throws ENOENT | EISDIR
   */
  readFile(ctx: RequestContext, path: string, opts?: { readonly range?: RangeSpec; readonly transform?: TransformRequest }): Promise<HeadedStream<ReadHead>>
  /**
   * Writes a whole file from `body`, atomically (readers see the old file or the new one,
   * nothing is left of a write that failed); missing folders are made (`foldersBelow`:
   * only below that folder). Without `overwrite` an existing file is EEXIST. The answer is
   * the file as committed, with the digest `digest` asked for.
   * @throws EINTEGRITY (the body is not the `sha256` given) | EEXIST | ENOENT | EISDIR
   */
  writeFile(ctx: RequestContext, path: string, body: AsyncIterable<Uint8Array>, opts: WriteFileOptions): Promise<WrittenFile>
  /**
   * Writes a whole file from a staged upload (core/staged.ts: a tus upload's file, an S3
   * multipart upload's parts in order), as `writeFile` writes one from a body, with the
   * same rights, the same count against the client's transfer limits and the same
   * atomicity; in one worker task, which reads the staged files where they are (no byte
   * crosses to the main thread). The staged files stay: the door removes them once it has
   * recorded the commit. `size`: the bytes they must hold (else EIO, nothing written).
   * `metadata`: kept with the object where the storage can (`abilities.metadata`).
   * @returns the entry written; null when the staged upload is gone (nothing written)
   */
  commitStaged(
    ctx: RequestContext,
    path: string,
    source: StagedSource,
    opts: { readonly overwrite: boolean; readonly size?: number; readonly metadata?: ObjectMetadata },
  ): Promise<FsEntry | null>
  /**
   * What `writeFile` would refuse, found before a byte is taken (a door that stages the
   * bytes first asks this first): the rights, a file there that may not be replaced
   * (EACCES) or, without `overwrite`, EEXIST; a target that is a folder, or a link
   * leading out of the root.
   */
  checkWrite(ctx: RequestContext, path: string, opts: { readonly overwrite: boolean }): Promise<void>
  /** A folder and its missing parents; an existing folder is EEXIST. @throws ENOTDIR (a parent is a file) */
  makeFolders(ctx: RequestContext, dir: string): Promise<void>
  /**
   * A file, or a folder with everything in it (a link is removed, never followed), as one
   * worker task (the driver's bulk delete where it has one). Cancelled, what was removed
   * stays removed. @throws ENOENT | EACCES (the root)
   */
  removeTree(ctx: RequestContext, path: string): Promise<void>
  /** `rename`, making the target's missing folders. @throws ENOENT | EEXIST | EINVAL (a folder into itself) */
  move(ctx: RequestContext, from: string, to: string, opts: { readonly overwrite: boolean }): Promise<void>
  /** Creates an empty file (and missing folders); anything already there is left as it is. */
  touch(ctx: RequestContext, path: string): Promise<void>
  /** A zip archive of files and folders, streamed as the worker makes it. @throws ENOENT */
  zip(ctx: RequestContext, paths: readonly string[], compression: ZipCompression): Promise<HeadedStream<ZipHead>>
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
  open(ctx: RequestContext, path: string, flags: OpenFlags): Promise<FileHandle>
  /** What the store keeps with a file (`abilities.metadata`). @throws ENOTSUP elsewhere | ENOENT | EISDIR */
  metadata(ctx: RequestContext, path: string): Promise<StoredMetadata>
  /** Size and free space of the storage holding `path` (SFTP's statvfs, `df`). @throws ENOTSUP where the backend does not tell */
  space(ctx: RequestContext, path: string): Promise<Space>
  /** Ends the view (the session closed): every handle still open is aborted. */
  close(): void
}
