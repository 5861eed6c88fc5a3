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
import type { FsAbilities } from './protocol-fs.js'
import type { StagedRequest } from './staged.js'

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
      readonly port: MessagePort
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
  /** Creates an empty file (parents as needed); an existing file is left alone. */
  | { readonly op: 'touch'; readonly path: string }
  /** The object metadata the store keeps (reply: `StoredMetadata`); ENOTSUP where it keeps none. */
  | { readonly op: 'metadata'; readonly path: string }
  /** Reply value: `ZipStart`; then the archive bytes on its port. */
  | { readonly op: 'zip'; readonly paths: readonly string[]; readonly compression: ZipCompression }

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
  write: Entry
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

export function assertNever(x: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(x)}`)
}
