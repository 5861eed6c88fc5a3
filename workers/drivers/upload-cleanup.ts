/**
 * @module workers/drivers/upload-cleanup
 * Deferred clean-up of failed uploads, written once for every remote driver. A
 * failed upload leaves something behind on the server: a hidden temporary file
 * (`.filegate-<id>.part`, never listed: SFTP, FTP, SMB) or an unfinished multipart
 * upload (S3, billed storage). The driver removes it at once; when it cannot
 * because the server is unreachable (the very failure that stopped the upload, often),
 * the item is remembered here and removed after the next request that succeeds, when
 * the server answers again; a sweep that fails again is retried on a backing-off timer
 * too, so the clean-up does not wait for traffic.
 *
 * Bounded: at most `maxPending` items are remembered (beyond that, a `.part` stays
 * on the server, hidden), each retried at most `maxTries` times. A failure that is
 * not retryable (the item is gone already, or refused for good) forgets it. The
 * memory is per driver instance, so per worker thread: items are lost when the
 * thread ends, as they would be with a crash.
 */
import { isFsError } from '../../core/errors.js'

export interface UploadCleanupOptions<K> {
  /** Removes one item; resolves when it is gone (already gone counts). Runs on a fresh session of its own. */
  readonly run: (item: K) => Promise<void>
  /** Whether a failure is worth another try later (the server could not be reached). Default: an FsError marked retryable. */
  readonly retryable?: (err: unknown) => boolean
  readonly maxPending?: number
  readonly maxTries?: number
}

const MAX_PENDING = 1000
const MAX_TRIES = 20
/** Retries without a request to wait for: after 0.5 s, then doubling, at most every 30 s. */
const RETRY_FIRST_MS = 500
const RETRY_MAX_MS = 30_000

const fsRetryable = (err: unknown): boolean => isFsError(err) && err.retryable

export class UploadCleanup<K> {
  readonly #run: (item: K) => Promise<void>
  readonly #retryable: (err: unknown) => boolean
  readonly #maxPending: number
  readonly #maxTries: number
  /** Item → failed attempts so far. */
  readonly #pending = new Map<K, number>()
  #sweeping = false

  constructor(opts: UploadCleanupOptions<K>) {
    this.#run = opts.run
    this.#retryable = opts.retryable ?? fsRetryable
    this.#maxPending = opts.maxPending ?? MAX_PENDING
    this.#maxTries = opts.maxTries ?? MAX_TRIES
  }

  /**
   * Removes `item` now, with `attempt` (on a session the caller holds) or else the
   * `run` given at construction; a retryable failure remembers it. Never throws.
   */
  async now(item: K, attempt?: () => Promise<void>): Promise<void> {
    try {
      await (attempt ?? (() => this.#run(item)))()
    } catch (err) {
      if (this.#retryable(err)) this.later(item)
    }
  }

  /** Remembers `item` without trying now (the connection is known to be gone). */
  later(item: K): void {
    if (this.#pending.has(item) || this.#pending.size >= this.#maxPending) return
    this.#pending.set(item, 0)
  }

  /** Call after any request that succeeded: the pending items are tried, one sweep at a time, in the background. */
  afterSuccess(): void {
    if (this.#pending.size === 0 || this.#sweeping) return
    this.#sweeping = true
    void this.#sweep().finally(() => {
      this.#sweeping = false
    })
  }

  async #sweep(): Promise<void> {
    for (const [item, tries] of [...this.#pending]) {
      try {
        await this.#run(item)
        this.#pending.delete(item)
      } catch (err) {
        if (!this.#retryable(err) || tries + 1 >= this.#maxTries) {
          this.#pending.delete(item)
          continue
        }
        this.#pending.set(item, tries + 1)
        // Unreachable again (or a connection that died with the server): the next success
        // resumes, and so does a timer, backing off, in case no other request comes.
        setTimeout(() => this.afterSuccess(), Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** tries)).unref()
        return
      }
    }
  }
}
