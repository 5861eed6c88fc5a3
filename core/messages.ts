/**
 * @module core/messages
 * The typed wire protocol between the main thread and the worker pool
 * (workers/pool.ts on the main thread, workers/entry.ts in each worker).
 *
 * A request is one task on one worker's own channel (`ToWorker` / `FromWorker`). It
 * names its backend by key: the spec (credentials included) crosses to a worker once,
 * with the first request that worker gets for that key; a worker that no longer knows
 * a key parks the request and asks for the spec once (`needBackend`).
 *
 * Streams are actors: a read or zip task replies once the stream is set up (its head),
 * with a MessagePort on which the worker then streams the bytes on its own, outside any
 * task slot; a write is a live transfer for its whole body. Frames on those ports are
 * `StreamFrame`s (core/port-stream.ts). Cancelling is a frame: `cancel` on a stream's
 * port, or `cancel` by task id on the worker's channel for every other op.
 * Replies are data, never thrown errors: an error's code must survive the trip.
 */
import type { MessagePort } from 'node:worker_threads'
import type { BackendSpec } from './backend.js'
import type { ByteRange, Entry, ObjectMetadata, Space, StoredMetadata } from './driver.js'
import type { WireError } from './errors.js'
import type { FsAbilities, OpenFlags } from './view-parts.js'
import type { StagedRequest, StagedSource } from './staged.js'

export const PROTOCOL_VERSION = 2

/** Fields every request carries. */
export interface RequestBase {
  readonly v: typeof PROTOCOL_VERSION
  readonly requestId: string
  /** backendKey(spec), computed once on the main thread; the spec travels separately (`ToWorker`). */
  readonly key: string
}

/**
 * A download transform chosen on the main thread: the plugin's name and the parameters its
 * `select` hook returned (plain data, already validated).
 */
export interface TransformRequest {
  readonly plugin: string
  readonly params: unknown
}

/** An unresolved HTTP-style range: `bytes=a-b`, `a-`, or the last `suffix` bytes. */
export type RangeSpec = { readonly start: number; readonly end?: number } | { readonly suffix: number }

export type ZipCompression = 'auto' | 'store'

export type RequestBody =
  | { readonly op: 'stat'; readonly path: string }
  /** The entry itself, not following a final link (the driver's `lstat`, else `stat`). */
  | { readonly op: 'lstat'; readonly path: string }
  /** A directory's entries, sorted by name; a file is ENOTDIR. */
  | { readonly op: 'list'; readonly path: string }
  /**
   * One stat, then either the bytes in the reply (`inlineMax` bytes or less, no transform)
   * or a stream: the reply carries the port the worker streams on. With `transform`, a
   * plugin's download transform (core/plugin.ts) makes the bytes; `range` is not combined
   * with it. Reply value: `ReadStart`.
   */
  | { readonly op: 'read'; readonly path: string; readonly range?: RangeSpec; readonly transform?: TransformRequest; readonly inlineMax: number }
  /** Atomic; the worker grants credits on `port`. `parents`: create missing parent directories. */
  | {
      readonly op: 'write'
      readonly path: string
      readonly overwrite: boolean
      readonly parents: boolean
      readonly size?: number
      readonly mtimeMs?: number
      /** Kept with the object where the driver can (`metadata` ability). */
      readonly metadata?: ObjectMetadata
      /** Hash the bytes as they are written: the reply is the entry with `digest` (hex). */
      readonly digest?: 'md5'
      /** The body's SHA-256 (hex), checked at its end before the driver commits: EINTEGRITY otherwise. */
      readonly sha256?: string
      /**
       * With `parents`: only folders below this one are made, and it must exist (ENOENT);
       * those made are removed again when the write fails.
       */
      readonly foldersBelow?: string
      readonly port: MessagePort
    }
  /**
   * Commits a staged upload (core/staged.ts `StagedSource`) into `path`, atomically like
   * `write`, in one task: the worker reads the staged files from the staging folder and
   * writes them through the driver; no byte crosses to the main thread. `size`: the bytes
   * the staged files must hold (else EIO, nothing written). Reply: the entry, or null
   * when the staged upload is gone (aborted, swept: nothing was written).
   */
  | {
      readonly op: 'commitStaged'
      readonly path: string
      readonly source: StagedSource
      readonly overwrite: boolean
      readonly parents: boolean
      readonly size?: number
      readonly metadata?: ObjectMetadata
    }
  /** `parents`: mkdir -p. `exclusive`: an existing directory is EEXIST. */
  | { readonly op: 'mkdir'; readonly path: string; readonly parents: boolean; readonly exclusive: boolean }
  /**
   * One file or empty directory, or (`recursive`) a whole tree. `kind`: only that kind
   * (EISDIR / ENOTDIR otherwise; a link is not a directory).
   */
  | { readonly op: 'remove'; readonly path: string; readonly recursive: boolean; readonly kind?: 'file' | 'dir' }
  /** The driver's own rename (ENOTSUP when it has none). */
  | { readonly op: 'rename'; readonly from: string; readonly to: string; readonly overwrite: boolean }
  /** The contract's mv: parents created (unless `parents` is false: ENOENT), rename or copy + delete. */
  | { readonly op: 'move'; readonly from: string; readonly to: string; readonly overwrite: boolean; readonly parents?: boolean }
  | { readonly op: 'setMtime'; readonly path: string; readonly mtimeMs: number }
  /** ENOTSUP where the driver keeps no modes. */
  | { readonly op: 'setMode'; readonly path: string; readonly mode: number }
  /** Cuts or extends a file, atomically (the driver's own, else a rewrite). */
  | { readonly op: 'truncate'; readonly path: string; readonly size: number }
  /** One file, inside the backend where it can, else streamed in the worker; atomic; the parent must exist. */
  | { readonly op: 'copy'; readonly from: string; readonly to: string; readonly overwrite: boolean }
  /** In place into an existing file (the driver's `writeAt`; ENOTSUP without); `data` is transferred. */
  | { readonly op: 'writeAt'; readonly path: string; readonly offset: number; readonly data: Uint8Array }
  /** What the backend can do (reply: `BackendAbilities`); also checks that it can be reached. */
  | { readonly op: 'abilities' }
  /** Size and free space of the file system holding `path` (reply: `Space`); ENOTSUP where the backend does not tell. */
  | { readonly op: 'space'; readonly path: string }
  /** Creates an empty file (`parents`: missing parents made, else ENOENT); an existing file is left alone. */
  | { readonly op: 'touch'; readonly path: string; readonly parents?: boolean }
  /** The object metadata the store keeps (reply: `StoredMetadata`); ENOTSUP where it keeps none. */
  | { readonly op: 'metadata'; readonly path: string }
  /** Reply value: `ZipStart`; then the archive bytes on its port. */
  | { readonly op: 'zip'; readonly paths: readonly string[]; readonly compression: ZipCompression }
  /**
   * A protocol gateway opens a file (core/view.ts `FileHandle`): the worker checks
   * the open as the flags ask, then keeps the file as an actor (workers/handles/) that
   * takes `ToHandle` messages on `port` and answers `FromHandle`. Reply value: `HandleOpened`.
   */
  | { readonly op: 'open'; readonly path: string; readonly port: MessagePort; readonly open: HandleOpen }
  /** Removes a gateway staging copy a handle left (its thread died under it): `name` in `dir`. */
  | { readonly op: 'unstage'; readonly dir: string; readonly name: string }

export type Request = RequestBase & RequestBody
export type Op = RequestBody['op']

/**
 * Reply values by op: one for every op (a request without one does not compile). `void`:
 * the reply carries no value (null on the wire).
 */
export interface ReplyValues extends Record<Op, unknown> {
  stat: Entry
  lstat: Entry
  list: Entry[]
  read: ReadStart
  write: Entry & { readonly digest?: string }
  commitStaged: Entry | null
  mkdir: void
  remove: void
  rename: void
  move: void
  setMtime: void
  setMode: void
  truncate: void
  copy: Entry
  writeAt: void
  abilities: BackendAbilities
  space: Space
  touch: void
  metadata: StoredMetadata
  zip: ZipStart
  open: HandleOpened
  unstage: void
}

/** The value a request's reply carries, by the request's op: what a caller gets, without naming it. */
export type ReplyOf<R extends { readonly op: Op }> = ReplyValues[R['op']]

export type Reply<V = unknown> = { readonly ok: true; readonly value: V } | { readonly ok: false; readonly error: WireError }

/** Main thread → one worker, on that worker's own channel. */
export type ToWorker =
  /** `backend`: sent with the first request for `req.key` to this worker. */
  | { readonly t: 'run'; readonly id: number; readonly req: Request; readonly backend?: BackendSpec }
  /** The caller went away: abort task `id` (a no-op when it already ended). */
  | { readonly t: 'cancel'; readonly id: number }
  /** The spec a worker asked for (`needBackend`). */
  | { readonly t: 'backend'; readonly key: string; readonly spec: BackendSpec }
  /** A staged upload's op (core/staged.ts): no backend, the staging folder; answered by a `reply` like `run`. */
  | { readonly t: 'staged'; readonly id: number; readonly req: StagedRequest }

/** One worker → the main thread. */
export type FromWorker =
  | { readonly t: 'reply'; readonly id: number; readonly reply: Reply }
  /** This worker holds requests for a backend key it does not know (it evicted it): send its spec (`backend`). */
  | { readonly t: 'needBackend'; readonly key: string }
  /** Task `id` is about to create a temporary file at `path` (a storage path): the pool removes it if this thread dies first. */
  | { readonly t: 'temp'; readonly id: number; readonly path: string }

/** What a protocol view may offer over a backend, and whether it writes in place (`writeAt`). */
export interface BackendAbilities extends FsAbilities {
  readonly inPlaceWrites: boolean
}

/** First frame of a read stream. */
export interface ReadHead {
  readonly entry: Entry
  /** The resolved range; null for the whole file. */
  readonly range: Required<ByteRange> | null
  /** The requested range does not overlap the file: no bytes follow. */
  readonly unsatisfiable: boolean
  /**
   * Set when a transform produced the bytes that follow: their media type. Their length is
   * unknown, and `entry` describes the original file, not them.
   */
  readonly transformed?: { readonly type: string }
}

/** A read's reply: its head, and either every byte (`bytes`) or the port they stream on. */
export interface ReadStart {
  readonly head: ReadHead
  /** The bytes when they fit `inlineMax` (empty when none follow); null when they stream on `port`. */
  readonly bytes: Uint8Array | null
  readonly port?: MessagePort
}

/** First frame of a zip stream: every path exists. */
export interface ZipHead {
  readonly entries: number
}

export interface ZipStart {
  readonly head: ZipHead
  readonly port: MessagePort
}

/** How a gateway's file is opened, and what its actor may hold (the `open` op). */
export interface HandleOpen {
  readonly flags: OpenFlags
  /** Write in place where the driver can (else every write that is not a `put` goes through staging). */
  readonly inPlace: boolean
  /** Folder of private staging copies (`<data_dir>/gateway-staging`). */
  readonly stagingDir: string
  /** Bytes joined into one chunk before the driver takes them (1 MiB). */
  readonly chunkBytes: number
  /** Bytes held out of order, or waiting for the driver, before the handle takes no more (64 MiB). */
  readonly windowBytes: number
  /** A read-ahead stream not read for this long is dropped. */
  readonly idleMs: number
}

/**
 * What the handle does with writes, chosen at open: one atomic upload fed in order
 * (`put`), writes in place (`inPlace`), a private staging copy committed at close
 * (`staging`), or none (`read`).
 */
export type HandleMode = 'put' | 'inPlace' | 'staging' | 'read'

/** The `open` op's reply: the file at open (null: a new file) and the handle's mode. */
export interface HandleOpened {
  readonly entry: Entry | null
  readonly mode: HandleMode
}

/**
 * A handle actor's figures (a view's `stats`): read-ahead streams started and live,
 * chunks given to the driver, and whether its upload is under way (the main thread counts
 * a live stream or upload as a transfer on the actor's thread).
 */
export interface HandleFigures {
  readonly readStreams: number
  readonly liveReadStreams: number
  readonly uploadChunks: number
  readonly uploading: boolean
}

/**
 * Main thread → a handle actor, on its port. Calls with an `id` are answered (`done`)
 * in the order they came; a `write` is answered with `taken` once the handle took its
 * bytes (the credit that lets the main thread send more).
 */
export type ToHandle =
  | { readonly t: 'read'; readonly id: number; readonly offset: number; readonly length: number }
  /** `data` is transferred; `give`: the bytes may be handed to the driver as they are (not joined into a chunk). */
  | { readonly t: 'write'; readonly offset: number; readonly data: Uint8Array; readonly give: boolean }
  | { readonly t: 'stat'; readonly id: number }
  | { readonly t: 'truncate'; readonly id: number; readonly size: number }
  /** Commits; answered with null. */
  | { readonly t: 'close'; readonly id: number }
  /** Drops everything not committed; the actor ends. */
  | { readonly t: 'abort' }
  /** The answer to `hold`: the staging bytes were charged (or `error`: over a limit). */
  | { readonly t: 'held'; readonly id: number; readonly error?: WireError }

/** A handle actor → the main thread, on its port. */
export type FromHandle =
  | { readonly t: 'done'; readonly id: number; readonly reply: Reply; readonly figures: HandleFigures }
  /** A write's bytes were taken (`bytes` of them); `error`: that write failed (the handle is failed). */
  | { readonly t: 'taken'; readonly bytes: number; readonly error?: WireError; readonly figures: HandleFigures }
  | { readonly t: 'figures'; readonly figures: HandleFigures }
  /**
   * The staging copy's bytes, counted against the staging bounds (core/staging-quota.ts)
   * on the main thread: `grow` asks to charge more before writing (answered with `held`),
   * `size` says what the copy holds now, `release` gives it all back.
   */
  | { readonly t: 'hold'; readonly id: number; readonly grow: number }
  | { readonly t: 'holdSize'; readonly size: number }
  | { readonly t: 'holdRelease' }
  /** The staging copy's file name in the staging folder, told before it is made (to remove it if this thread dies). */
  | { readonly t: 'staged'; readonly name: string }

export function assertNever(x: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(x)}`)
}
