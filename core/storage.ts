/**
 * @module core/storage
 * What request handlers (HTTP routes, and later the gateways) use to act on one
 * session's storage: the contract's operations, bound to one backend. The
 * composition root builds it over the worker pool (workers/client.ts), so
 * handlers never touch threads or drivers.
 *
 * Paths are canonical and already authorised.
 */
import type { Entry } from './driver.js'
import type { RequestContext } from './request-context.js'
import type { RangeSpec, ReadHead, TransformRequest, ZipCompression, ZipHead } from './messages.js'

/** Who asks and how to cancel: core/request-context.ts (protocol-fs.ts uses it too, without the rest of this file). */
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

export interface Storage {
  stat(ctx: RequestContext, path: string): Promise<Entry>
  /** Sorted by name. @throws ENOTDIR for a file */
  list(ctx: RequestContext, dir: string): Promise<Entry[]>
  /** With `transform`, a plugin's download transform (core/plugin.ts) makes the bytes; no range then. */
  read(ctx: RequestContext, path: string, range?: RangeSpec, transform?: TransformRequest): Promise<HeadedStream<ReadHead>>
  /** Atomic; parents created. */
  write(ctx: RequestContext, path: string, body: AsyncIterable<Uint8Array>, opts: { overwrite: boolean; size?: number }): Promise<Entry>
  /** mkdir -p; an existing directory is EEXIST. */
  mkdir(ctx: RequestContext, dir: string): Promise<void>
  /** Recursive. */
  remove(ctx: RequestContext, path: string): Promise<void>
  move(ctx: RequestContext, from: string, to: string, overwrite: boolean): Promise<void>
  touch(ctx: RequestContext, path: string): Promise<void>
  zip(ctx: RequestContext, paths: readonly string[], compression: ZipCompression): Promise<HeadedStream<ZipHead>>
}
