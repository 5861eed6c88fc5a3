/**
 * @module gateways/connection/chroot-storage
 * A Storage seen from inside one of its folders (a share's path): the client's `/`
 * is `root`, and nothing above it can be named. Paths arrive canonical (core/paths.ts
 * already refused a `..` climbing above `/`), so joining them under the root cannot
 * escape it. Errors coming back are rewritten so they never show the outer path.
 *
 * A file share (`only` set) chroots to the file's folder and lets exactly one name
 * through: `/<name>`. Its `/` lists that file alone; any other path is not found
 * (reads) or forbidden (writes).
 */
import { FsError, isFsError } from '../../core/errors.js'
import type { Entry } from '../../core/driver.js'
import type { HeadedStream, RequestContext, Storage } from '../../core/storage.js'
import type { RangeSpec, ReadHead, TransformRequest, ZipCompression, ZipHead } from '../../core/messages.js'

export class ChrootStorage implements Storage {
  readonly #inner: Storage
  readonly #root: string
  readonly #only: string | null

  /**
   * @param root canonical path inside `inner`
   * @param only for a file share: the one name (under `root`) that may be reached
   */
  constructor(inner: Storage, root: string, only: string | null = null) {
    this.#inner = inner
    this.#root = root === '/' ? '' : root
    this.#only = only
  }

  /** Client path (canonical) → inner path. */
  #in(p: string, write = false): string {
    if (this.#only !== null && p !== `/${this.#only}` && !(p === '/' && !write)) {
      throw write ? new FsError('EACCES', 'this share allows only its one file') : new FsError('ENOENT', `not found: ${p}`, { path: p })
    }
    return p === '/' ? this.#root || '/' : this.#root + p
  }

  /** Inner path → client path. */
  #out(p: string): string {
    if (this.#root === '') return p
    if (p === this.#root) return '/'
    if (p.startsWith(this.#root + '/')) return p.slice(this.#root.length)
    return '/'
  }

  /** An error with the outer path taken out of its message and `path`. */
  #clean(err: unknown): unknown {
    if (!isFsError(err) || this.#root === '') return err
    const message = err.message.split(this.#root + '/').join('/').split(this.#root).join('/')
    return new FsError(err.code, message, { retryable: err.retryable, ...(err.path === undefined ? {} : { path: this.#out(err.path) }) })
  }

  async #call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn()
    } catch (err) {
      throw this.#clean(err)
    }
  }

  stat(ctx: RequestContext, path: string): Promise<Entry> {
    return this.#call(() => this.#inner.stat(ctx, this.#in(path)))
  }

  list(ctx: RequestContext, dir: string): Promise<Entry[]> {
    return this.#call(async () => {
      const entries = await this.#inner.list(ctx, this.#in(dir))
      return this.#only === null ? entries : entries.filter((e) => e.name === this.#only)
    })
  }

  read(ctx: RequestContext, path: string, range?: RangeSpec, transform?: TransformRequest): Promise<HeadedStream<ReadHead>> {
    return this.#call(() => this.#inner.read(ctx, this.#in(path), range, transform))
  }

  write(ctx: RequestContext, path: string, body: AsyncIterable<Uint8Array>, opts: { overwrite: boolean; size?: number }): Promise<Entry> {
    return this.#call(() => this.#inner.write(ctx, this.#in(path, true), body, opts))
  }

  mkdir(ctx: RequestContext, dir: string): Promise<void> {
    return this.#call(() => this.#inner.mkdir(ctx, this.#in(dir, true)))
  }

  remove(ctx: RequestContext, path: string): Promise<void> {
    return this.#call(() => this.#inner.remove(ctx, this.#in(path, true)))
  }

  move(ctx: RequestContext, from: string, to: string, overwrite: boolean): Promise<void> {
    return this.#call(() => this.#inner.move(ctx, this.#in(from, true), this.#in(to, true), overwrite))
  }

  touch(ctx: RequestContext, path: string): Promise<void> {
    return this.#call(() => this.#inner.touch(ctx, this.#in(path, true)))
  }

  zip(ctx: RequestContext, paths: readonly string[], compression: ZipCompression): Promise<HeadedStream<ZipHead>> {
    // A file share's `/` would zip the whole folder: name the file instead.
    const mapped = paths.map((p) => (this.#only !== null && p === '/' ? this.#in(`/${this.#only}`) : this.#in(p)))
    return this.#call(() => this.#inner.zip(ctx, mapped, compression))
  }
}
