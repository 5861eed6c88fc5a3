/**
 * @module core/messages
 * The typed wire protocol between the main thread and the worker pool.
 *
 * A request is one pool task. Streaming requests carry a MessagePort (`port`);
 * their task stays pending until the stream ends, so the pool's concurrency and
 * queue limits count live transfers. Frames on that port are `StreamFrame`s
 * (core/port-stream.ts). Replies are data, never thrown errors: piscina would
 * lose an error's code on the way back.
 */
import type { MessagePort } from 'node:worker_threads'
import type { BackendSpec } from './backend.js'
import type { ByteRange, Entry } from './driver.js'
import type { WireError } from './errors.js'

export const PROTOCOL_VERSION = 1

/** Fields every request carries. */
export interface RequestBase {
  readonly v: typeof PROTOCOL_VERSION
  readonly requestId: string
  readonly backend: BackendSpec
  /** backendKey(backend), computed once on the main thread. */
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
  /** A directory's entries, sorted by name; a file is ENOTDIR. */
  | { readonly op: 'list'; readonly path: string }
  /**
   * Head frame: `ReadHead`; then the bytes. With `transform`, a plugin's download transform
   * (core/plugin.ts) runs on the bytes in the worker; `range` is not combined with it.
   */
  | { readonly op: 'read'; readonly path: string; readonly range?: RangeSpec; readonly transform?: TransformRequest; readonly port: MessagePort }
  /**
   * A read answered in the task's reply when it is `max` bytes or less: no port, no
   * frames (two messages instead of about eight). Otherwise `bytes` is null and the
   * caller streams with `read`. Reply value: `InlineRead`.
   */
  | { readonly op: 'readInline'; readonly path: string; readonly range?: RangeSpec; readonly max: number }
  /** Atomic; the worker grants credits on `port`. `parents`: create missing parent directories. */
  | {
      readonly op: 'write'
      readonly path: string
      readonly overwrite: boolean
      readonly parents: boolean
      readonly size?: number
      readonly mtimeMs?: number
      readonly port: MessagePort
    }
  /** `parents`: mkdir -p. `exclusive`: an existing directory is EEXIST. */
  | { readonly op: 'mkdir'; readonly path: string; readonly parents: boolean; readonly exclusive: boolean }
  /** One file or empty directory, or (`recursive`) a whole tree. */
  | { readonly op: 'remove'; readonly path: string; readonly recursive: boolean }
  /** The driver's own rename (ENOTSUP when it has none). */
  | { readonly op: 'rename'; readonly from: string; readonly to: string; readonly overwrite: boolean }
  /** The contract's mv: parents created, rename or copy + delete. */
  | { readonly op: 'move'; readonly from: string; readonly to: string; readonly overwrite: boolean }
  | { readonly op: 'setMtime'; readonly path: string; readonly mtimeMs: number }
  /** Creates an empty file (parents as needed); an existing file is left alone. */
  | { readonly op: 'touch'; readonly path: string }
  /** Head frame: `ZipHead`; then the archive bytes. */
  | { readonly op: 'zip'; readonly paths: readonly string[]; readonly compression: ZipCompression; readonly port: MessagePort }

export type Request = RequestBase & RequestBody
export type Op = RequestBody['op']

/** Reply values by op. */
export interface ReplyValues {
  stat: Entry
  list: Entry[]
  read: null
  readInline: InlineRead
  write: Entry
  mkdir: null
  remove: null
  rename: null
  move: null
  setMtime: null
  touch: null
  zip: null
}

export type Reply<V = unknown> = { readonly ok: true; readonly value: V } | { readonly ok: false; readonly error: WireError }

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

export interface InlineRead {
  readonly head: ReadHead
  /** The bytes, or null when there are more than asked for. */
  readonly bytes: Uint8Array | null
}

/** First frame of a zip stream: every path exists. */
export interface ZipHead {
  readonly entries: number
}

export function assertNever(x: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(x)}`)
}
