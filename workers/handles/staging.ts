/**
 * @module workers/handles/staging
 * A private copy of a file for writes that are not "from 0 on a new or truncated file"
 * (appends, resumed uploads, random writes, files opened without truncation): a file
 * under `<data_dir>/gateway-staging/` (mode 0600, a random name), filled with the
 * file's current content when the handle needs it, written and read at offsets, and
 * committed at close as one atomic upload (the driver's write), then removed. An abort
 * removes it and commits nothing. WORKER THREAD: the copy is written by the worker that
 * owns the handle, never by the main thread; the folder is emptied at start-up
 * (gateways/connection/staging-sweep.ts: files of a process that died), and a copy
 * whose thread died is removed by another (the `unstage` op). Its bytes count against the staging bounds
 * (core/staging-quota.ts) while it exists: a write past them fails (EFBIG, ENOSPC)
 * and writes nothing.
 */
import { randomBytes } from 'node:crypto'
import * as fs from 'node:fs/promises'
import * as nodePath from 'node:path'
import type { Entry } from '../../core/driver.js'
import { FsError } from '../../core/errors.js'

/**
 * The staging bounds' hold on this copy (core/staging-quota.ts `StagingHold`); the bounds
 * are counted on the main thread, so the actor's hold asks them by message (actor.ts).
 */
export interface Hold {
  readonly bytes: number
  grow(n: number): Promise<void>
  setTo(size: number): void
  release(): void
}

const CHUNK = 1024 * 1024

export class StagingFile {
  readonly #fh: fs.FileHandle
  readonly #path: string
  readonly #hold: Hold | undefined
  #size = 0
  #closed = false

  private constructor(fh: fs.FileHandle, path: string, hold: Hold | undefined) {
    this.#fh = fh
    this.#path = path
    this.#hold = hold
  }

  /**
   * A new empty staging file in `dir`, filled from `initial` when given; its bytes charged
   * to `hold`. `announce` is told its name before it exists (so that a copy whose thread
   * dies while it is filled can be removed by another).
   */
  static async create(dir: string, initial: AsyncIterable<Uint8Array> | null, hold?: Hold, announce?: (name: string) => void): Promise<StagingFile> {
    await fs.mkdir(dir, { recursive: true, mode: 0o700 })
    const name = `${randomBytes(16).toString('hex')}.staging`
    announce?.(name)
    const path = nodePath.join(dir, name)
    let fh: fs.FileHandle
    try {
      fh = await fs.open(path, 'wx+', 0o600)
    } catch (err) {
      hold?.release()
      throw err
    }
    const s = new StagingFile(fh, path, hold)
    try {
      if (initial) for await (const chunk of initial) await s.write(s.#size, chunk)
      return s
    } catch (err) {
      await s.discard()
      throw err
    }
  }

  get size(): number {
    return this.#size
  }

  /** Its file name in the staging folder. */
  get name(): string {
    return nodePath.basename(this.#path)
  }

  async write(offset: number, data: Uint8Array): Promise<void> {
    // Only what makes the file longer is new disk space (a hole counts as if written).
    if (this.#hold && offset + data.byteLength > this.#hold.bytes) await this.#hold.grow(offset + data.byteLength - this.#hold.bytes)
    let done = 0
    while (done < data.byteLength) {
      const { bytesWritten } = await this.#fh.write(data, done, data.byteLength - done, offset + done)
      done += bytesWritten
    }
    this.#size = Math.max(this.#size, offset + data.byteLength)
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    const n = Math.max(0, Math.min(length, this.#size - offset))
    if (n === 0) return new Uint8Array(0)
    const buf = Buffer.allocUnsafeSlow(n)
    let got = 0
    while (got < n) {
      const { bytesRead } = await this.#fh.read(buf, got, n - got, offset + got)
      if (bytesRead === 0) break
      got += bytesRead
    }
    return buf.subarray(0, got)
  }

  async truncate(size: number): Promise<void> {
    if (this.#hold && size > this.#hold.bytes) await this.#hold.grow(size - this.#hold.bytes)
    await this.#fh.truncate(size)
    this.#size = size
    this.#hold?.setTo(size)
  }

  /** Uploads the whole file through `upload` (atomic), then removes it. */
  async commit(upload: (body: AsyncIterable<Uint8Array>, size: number) => Promise<Entry>): Promise<Entry> {
    try {
      return await upload(this.#chunks(), this.#size)
    } finally {
      await this.discard()
    }
  }

  async discard(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    await this.#fh.close().catch(() => {})
    await fs.rm(this.#path, { force: true })
    this.#hold?.release()
  }

  async *#chunks(): AsyncIterable<Uint8Array> {
    for (let pos = 0; pos < this.#size; ) {
      if (this.#closed) throw new FsError('ECANCELED', 'the file was closed')
      const chunk = await this.read(pos, CHUNK)
      if (chunk.byteLength === 0) break
      pos += chunk.byteLength
      yield chunk
    }
  }
}
