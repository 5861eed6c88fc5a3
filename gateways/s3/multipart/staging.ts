/**
 * @module gateways/s3/multipart/staging
 * Where the parts of multipart uploads wait for Complete: one private folder per upload,
 * `<staging dir>/<uploadId>/` (0700), one file per part (0600, `<number>.<random>`, so a
 * part re-sent while the previous one is read by a Complete never overwrites it). Parts
 * are streamed to disk as they arrive, their MD5 computed on the way: memory stays at
 * one chunk whatever the part's size. Each byte is charged to its upload's hold
 * (core/staging-quota.ts) before it is written.
 */
import { randomBytes } from 'node:crypto'
import { createReadStream } from 'node:fs'
import * as fs from 'node:fs/promises'
import { join } from 'node:path'
import { md5While } from '../meta/md5.js'
import { stagingError } from '../../../core/errors.js'
import type { StagingHold } from '../../../core/staging-quota.js'

/** An upload id: 32 hex digits (128 random bits); nothing else ever names a folder here. */
export const UPLOAD_ID = /^[0-9a-f]{32}$/

export const newUploadId = (): string => randomBytes(16).toString('hex')

/** Thrown when a part grows past the limit while it streams in. */
export class PartTooLarge extends Error {}

/** A part's bytes were cut off by a concurrent abort or sweep. */
export class UploadGone extends Error {}

export class PartStaging {
  readonly #dir: string

  constructor(dir: string) {
    this.#dir = dir
  }

  get dir(): string {
    return this.#dir
  }

  #uploadDir(id: string): string {
    if (!UPLOAD_ID.test(id)) throw new Error('not an upload id') // callers check first: never a path from a client
    return join(this.#dir, id)
  }

  /** The folder of a new upload. */
  async create(id: string): Promise<void> {
    await fs.mkdir(this.#dir, { recursive: true, mode: 0o700 })
    await fs.mkdir(this.#uploadDir(id), { mode: 0o700 })
  }

  /**
   * Streams `body` into a new part file of upload `id`, hashing it; over `maxBytes` the
   * file is removed and PartTooLarge thrown. A body that throws (a bad signature at its
   * end, a client gone) removes the file too.
   * @throws UploadGone when the upload's folder is gone (aborted, swept)
   */
  async write(id: string, number: number, body: AsyncIterable<Uint8Array>, maxBytes: number, hold?: StagingHold, reserved = 0): Promise<{ file: string; size: number; md5: string }> {
    const file = `${String(number).padStart(5, '0')}.${randomBytes(8).toString('hex')}`
    const path = join(this.#uploadDir(id), file)
    let fh: fs.FileHandle
    try {
      fh = await fs.open(path, 'wx', 0o600)
    } catch (err) {
      hold?.shrink(reserved)
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new UploadGone()
      throw stagingError(err)
    }
    const hashed = md5While(body)
    // `reserved` bytes were charged to `hold` before the body was read (its declared
    // length); the bytes past them are charged as they come, before they are written.
    let charged = reserved
    try {
      for await (const chunk of hashed.body) {
        if (hashed.bytes > maxBytes) throw new PartTooLarge()
        if (hold && hashed.bytes > charged) {
          await hold.grow(hashed.bytes - charged)
          charged = hashed.bytes
        }
        let done = 0
        while (done < chunk.byteLength) done += (await fh.write(chunk, done, chunk.byteLength - done)).bytesWritten
      }
      await fh.close()
    } catch (err) {
      await fh.close().catch(() => {})
      await fs.rm(path, { force: true })
      hold?.shrink(charged)
      throw stagingError(err)
    }
    if (charged > hashed.bytes) hold?.shrink(charged - hashed.bytes)
    return { file, size: hashed.bytes, md5: hashed.digest() }
  }

  /** A part's bytes, in chunks of at most 1 MiB. */
  async *read(id: string, file: string): AsyncIterable<Uint8Array> {
    yield* createReadStream(join(this.#uploadDir(id), file), { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>
  }

  /** Removes one part file (a replaced part); gone already is fine. @returns the bytes it held (0: gone already) */
  async removePart(id: string, file: string): Promise<number> {
    const path = join(this.#uploadDir(id), file)
    const size = await fs.stat(path).then((st) => st.size, () => 0)
    await fs.rm(path, { force: true })
    return size
  }

  /** Removes an upload's folder and everything in it. */
  async remove(id: string): Promise<void> {
    await fs.rm(this.#uploadDir(id), { recursive: true, force: true })
  }

  /** Every folder here: upload ids, and anything else (to sweep). */
  async entries(): Promise<string[]> {
    try {
      return await fs.readdir(this.#dir)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
      throw err
    }
  }

  /** The part files in an upload's folder. */
  async files(id: string): Promise<string[]> {
    try {
      return await fs.readdir(this.#uploadDir(id))
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
      throw err
    }
  }

  /** How long since a part file was last written to (ms); Infinity when it is gone. */
  async idleFor(id: string, file: string): Promise<number> {
    try {
      return Date.now() - (await fs.stat(join(this.#uploadDir(id), file))).mtimeMs
    } catch {
      return Infinity
    }
  }

  /** Removes an entry of the staging folder by name (sweeping what no upload owns). */
  async removeEntry(name: string): Promise<void> {
    if (name === '' || name.includes('/') || name === '.' || name === '..') return
    await fs.rm(join(this.#dir, name), { recursive: true, force: true })
  }
}
