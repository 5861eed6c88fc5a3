/**
 * @module core/staged
 * Staged uploads: bytes that wait for a commit (a tus upload until its last byte, the
 * parts of an S3 multipart upload until Complete), written at offsets, read back in
 * order by the commit, removed once it is recorded or when the upload is aborted or
 * expires. One mechanism for every door; the doors keep their records in the state
 * store and their rules (limits, expiry, who may) themselves.
 *
 * The bytes are a worker thread's business (workers/staged/): the main thread streams
 * them to a worker with the credit-based port streams (core/port-stream.ts) and never
 * opens, stats or lists a staged file itself. A staging area is a folder every node of
 * a cluster reaches (`staging_dir`), so any node may go on with an upload another node
 * started: an upload is its files, never a thread's memory.
 *
 * The commit is one worker task too (the view's `commitStaged`, core/view.ts): the
 * thread that writes the target storage reads the staged files straight from the
 * staging folder (a `StagedSource`: the area's absolute folder, every thread reaches it)
 * and writes them through its driver's atomic write (a local folder on the same disk
 * takes one staged file as it is, by a hard link: `Driver.adopt`). No staged byte comes
 * back to the main thread to be committed; a thread that dies under a commit leaves the
 * staged files as they were (and, as for any write, no temporary file at the target).
 *
 * Two layouts: `file`, one file per upload written in place at offsets (`<area>/<id>`,
 * tus), and `parts`, one folder per upload with a file per part (`<area>/<id>/<part>`,
 * S3 multipart), each part written once from its start.
 */
import type { MessagePort } from 'node:worker_threads'

export type StagedLayout = 'file' | 'parts'

/** An upload's staged bytes as they are now. */
export type StagedState =
  | { readonly layout: 'file'; readonly size: number; readonly mtimeMs: number }
  | { readonly layout: 'parts'; readonly parts: readonly StagedPart[] }

export interface StagedPart {
  readonly file: string
  readonly size: number
  readonly mtimeMs: number
}

/** An entry of a staging area: an upload, or debris to sweep. */
export interface StagedEntry {
  readonly name: string
  readonly mtimeMs: number
}

export interface StagedWriteOptions {
  /** `parts` layout: the part file, created (exclusive) by this write; absent: the upload's one file, written in place. */
  readonly part?: string
  /** Where the bytes go in the file. */
  readonly offset: number
  /** Hash the bytes as they are written, on the writing thread: the result carries `md5` (hex). */
  readonly digest?: 'md5'
  /**
   * The body's chunks are the caller's to hand over: a chunk that spans its whole buffer
   * moves to the worker (detached here) instead of being copied. Absent: every chunk is
   * copied, and the caller keeps its buffers.
   */
  readonly handOver?: boolean
  /** Aborting it stops the write (a part written so far is removed; a file keeps what was written). */
  readonly signal?: AbortSignal
}

export interface StagedWriteResult {
  /** Bytes this write added. */
  readonly bytes: number
  readonly md5?: string
}

/**
 * One staging area (a folder), as the doors use it. Names (`id`, `part`) are single path
 * segments the door chose; the worker refuses anything else.
 */
export interface StagedArea {
  readonly dir: string
  /** Makes the area's folder (0700) if it is not there. */
  prepare(): Promise<void>
  /** A new upload: an empty file (`file`) or an empty folder (`parts`), private (0600/0700). */
  create(id: string, layout: StagedLayout): Promise<void>
  /**
   * Streams `body` into the upload. A `part` write that does not finish leaves nothing
   * (the part file is removed, also when its thread dies under it); a `file` write keeps
   * what reached the disk (a client resumes from there). A failure of `body` itself is
   * rethrown as it was. ENOENT: the upload is gone (aborted, swept).
   */
  write(id: string, opts: StagedWriteOptions, body: AsyncIterable<Uint8Array>): Promise<StagedWriteResult>
  /** What is staged for `id`; null when nothing is. */
  state(id: string): Promise<StagedState | null>
  /** Removes an upload (or one of its parts); gone already is fine. @returns the bytes it held */
  remove(name: string, part?: string): Promise<number>
  /** Every entry of the area (none when it does not exist yet). */
  entries(): Promise<StagedEntry[]>
  /** Reads and removes a small file of the area (a record an older filegate kept there); null when absent. */
  take(name: string): Promise<string | null>
}

/**
 * A staged upload to commit into a storage (core/view.ts `commitStaged`): the area's folder
 * (`StagedArea.dir`, absolute), the upload's name in it, and for the `parts` layout the
 * part files to join, in order (absent: the `file` layout's one file). Plain data: it
 * crosses to the worker that writes the target, which refuses names that are not one
 * path segment as every staged op does.
 */
export interface StagedSource {
  readonly area: string
  readonly id: string
  readonly parts?: readonly string[]
}

/** What the composition root hands the doors. */
export interface StagedUploads {
  /** The staging area in folder `dir` (absolute). */
  area(dir: string): StagedArea
  /** Free bytes on the disk holding `dir` (Infinity when it cannot be told): the staging quota's reserve check. */
  freeBytes(dir: string): Promise<number>
}

// The wire (main thread → worker; workers/staged/actor.ts) -------------------------

export type StagedRequest =
  | { readonly op: 'prepare'; readonly area: string }
  | { readonly op: 'create'; readonly area: string; readonly id: string; readonly layout: StagedLayout }
  | { readonly op: 'write'; readonly area: string; readonly id: string; readonly part?: string; readonly offset: number; readonly digest?: 'md5'; readonly port: MessagePort }
  | { readonly op: 'state'; readonly area: string; readonly id: string }
  | { readonly op: 'remove'; readonly area: string; readonly name: string; readonly part?: string }
  | { readonly op: 'entries'; readonly area: string }
  | { readonly op: 'take'; readonly area: string; readonly name: string }
  | { readonly op: 'freeBytes'; readonly dir: string }

export interface StagedReplies {
  prepare: null
  create: null
  write: StagedWriteResult
  state: StagedState | null
  remove: number
  entries: StagedEntry[]
  take: string | null
  freeBytes: number
}
