/**
 * @module gateways/connection/transfer-limits
 * Fair shares of the transfer capacity: at most `perAddress` concurrent transfers
 * (downloads that stream, uploads, zips) from one client address and `perCredential`
 * with one credential (a session token, a share link). Beyond either, the request is
 * refused at once with EBUSY, saying which limit it hit (the HTTP API answers 429
 * RATE_LIMITED, SFTP FAILURE, S3 SlowDown); nothing waits.
 * Small reads answered whole by their task (64 KiB and less) are not transfers and are
 * never limited here.
 *
 * Applied as a Storage wrapper, so every protocol that names its client in the request
 * context (`RequestContext.client`) gets the same limits.
 */
import { FsError } from '../../core/errors.js'
import type { Entry } from '../../core/driver.js'
import type { RangeSpec, ReadHead, TransformRequest, ZipCompression, ZipHead } from '../../core/messages.js'
import type { ClientIdentity, HeadedStream, RequestContext, Storage } from '../../core/storage.js'

export interface TransferLimitSettings {
  readonly perAddress: number
  readonly perCredential: number
}

export class TransferLimits {
  readonly #settings: TransferLimitSettings
  readonly #byAddress = new Map<string, number>()
  readonly #byCredential = new Map<string, number>()

  constructor(settings: TransferLimitSettings) {
    this.#settings = settings
  }

  /** Counts one transfer for `client`; returns its (idempotent) release. @throws FsError EBUSY */
  acquire(client: ClientIdentity): () => void {
    const { address, credential } = client
    const a = this.#byAddress.get(address) ?? 0
    const c = this.#byCredential.get(credential) ?? 0
    if (a >= this.#settings.perAddress) {
      throw new FsError('EBUSY', `too many transfers at once from your address (at most ${this.#settings.perAddress}): retry when one has finished`)
    }
    if (c >= this.#settings.perCredential) {
      throw new FsError('EBUSY', `too many transfers at once with this credential (at most ${this.#settings.perCredential}): retry when one has finished`)
    }
    this.#byAddress.set(address, a + 1)
    this.#byCredential.set(credential, c + 1)
    let released = false
    return () => {
      if (released) return
      released = true
      decrement(this.#byAddress, address)
      decrement(this.#byCredential, credential)
    }
  }

  /** `storage` with these limits on its transfers. */
  wrap(storage: Storage): Storage {
    return new LimitedStorage(storage, this)
  }
}

function decrement(m: Map<string, number>, k: string): void {
  const n = (m.get(k) ?? 1) - 1
  if (n <= 0) m.delete(k)
  else m.set(k, n)
}

/** A stream that releases its transfer's count when it is over (read to the end, failed or cancelled). */
function counted<H>(s: HeadedStream<H>, release: () => void): HeadedStream<H> {
  async function* body(): AsyncIterable<Uint8Array> {
    try {
      yield* s.body
    } finally {
      release()
    }
  }
  return {
    head: s.head,
    body: body(),
    live: true,
    cancel: () => {
      s.cancel()
      release()
    },
  }
}

class LimitedStorage implements Storage {
  readonly #inner: Storage
  readonly #limits: TransferLimits

  constructor(inner: Storage, limits: TransferLimits) {
    this.#inner = inner
    this.#limits = limits
  }

  stat(ctx: RequestContext, path: string): Promise<Entry> {
    return this.#inner.stat(ctx, path)
  }
  list(ctx: RequestContext, dir: string): Promise<Entry[]> {
    return this.#inner.list(ctx, dir)
  }
  async read(ctx: RequestContext, path: string, range?: RangeSpec, transform?: TransformRequest): Promise<HeadedStream<ReadHead>> {
    const s = await this.#inner.read(ctx, path, range, transform)
    if (!s.live || !ctx.client) return s
    let release: () => void
    try {
      release = this.#limits.acquire(ctx.client)
    } catch (err) {
      s.cancel()
      throw err
    }
    return counted(s, release)
  }
  async write(ctx: RequestContext, path: string, body: AsyncIterable<Uint8Array>, opts: { overwrite: boolean; size?: number }): Promise<Entry> {
    const release = ctx.client ? this.#limits.acquire(ctx.client) : () => {}
    try {
      return await this.#inner.write(ctx, path, body, opts)
    } finally {
      release()
    }
  }
  mkdir(ctx: RequestContext, dir: string): Promise<void> {
    return this.#inner.mkdir(ctx, dir)
  }
  remove(ctx: RequestContext, path: string): Promise<void> {
    return this.#inner.remove(ctx, path)
  }
  move(ctx: RequestContext, from: string, to: string, overwrite: boolean): Promise<void> {
    return this.#inner.move(ctx, from, to, overwrite)
  }
  touch(ctx: RequestContext, path: string): Promise<void> {
    return this.#inner.touch(ctx, path)
  }
  async zip(ctx: RequestContext, paths: readonly string[], compression: ZipCompression): Promise<HeadedStream<ZipHead>> {
    const release = ctx.client ? this.#limits.acquire(ctx.client) : () => {}
    try {
      return counted(await this.#inner.zip(ctx, paths, compression), release)
    } catch (err) {
      release()
      throw err
    }
  }
}
