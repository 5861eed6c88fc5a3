/**
 * @module gateways/s3/multipart/staging
 * Where the parts of multipart uploads wait for Complete: a staging area of the `parts`
 * layout (core/staged.ts), one private folder per upload, `<staging dir>/<uploadId>/`
 * (0700), one file per part (0600, `<number>.<random>`, so a part re-sent while the
 * previous one is read by a Complete never overwrites it). A worker thread writes each
 * part as it arrives and computes its MD5 as it writes: the main thread counts the bytes
 * and charges them to the upload's hold (core/staging-quota.ts) before they go to the
 * worker, and neither touches the disk nor hashes. Memory stays at a few chunks whatever
 * the part's size. Complete reads the parts on a worker too (uploads.ts, the view's
 * `commitStaged`).
 */
import { randomBytes } from 'node:crypto'
import { isFsError, stagingError } from '../../../core/errors.js'
import type { StagedArea } from '../../../core/staged.js'
import type { StagingHold } from '../../../core/staging-quota.js'

/** An upload id: 32 hex digits (128 random bits); nothing else ever names a folder here. */
export const UPLOAD_ID = /^[0-9a-f]{32}$/

export const newUploadId = (): string => randomBytes(16).toString('hex')

/** Thrown when a part grows past the limit while it streams in. */
export class PartTooLarge extends Error {}

/** The upload is gone (a concurrent abort or sweep): a part's bytes cut off, or its parts found gone at Complete. */
export class UploadGone extends Error {}

/** A staged part file, as the sweep sees it. */
export interface StagedPartFile {
  readonly file: string
  readonly mtimeMs: number
}

export class PartStaging {
  readonly #area: StagedArea

  constructor(area: StagedArea) {
    this.#area = area
  }

  get dir(): string {
    return this.#area.dir
  }

  #check(id: string): string {
    if (!UPLOAD_ID.test(id)) throw new Error('not an upload id') // callers check first: never a path from a client
    return id
  }

  /** The folder of a new upload. */
  async create(id: string): Promise<void> {
    await this.#area.create(this.#check(id), 'parts')
  }

  /**
   * Streams `body` into a new part file of upload `id`, hashed where it is written; over
   * `maxBytes` the file is removed and PartTooLarge thrown. A body that throws (a bad
   * signature at its end, a client gone) removes the file too.
   * @throws UploadGone when the upload's folder is gone (aborted, swept)
   */
  async write(id: string, number: number, body: AsyncIterable<Uint8Array>, maxBytes: number, hold?: StagingHold, reserved = 0): Promise<{ file: string; size: number; md5: string }> {
    const part = `${String(number).padStart(5, '0')}.${randomBytes(8).toString('hex')}`
    // `reserved` bytes were charged to `hold` before the body was read (its declared
    // length); the bytes past them are charged as they come, before they are sent on.
    let charged = reserved
    let seen = 0
    async function* counted(): AsyncIterable<Uint8Array> {
      for await (const chunk of body) {
        seen += chunk.byteLength
        if (seen > maxBytes) throw new PartTooLarge()
        if (hold && seen > charged) {
          await hold.grow(seen - charged)
          charged = seen
        }
        yield chunk
      }
    }
    let written: { bytes: number; md5?: string }
    try {
      written = await this.#area.write(this.#check(id), { part, offset: 0, digest: 'md5' }, counted())
    } catch (err) {
      hold?.shrink(charged)
      if (isFsError(err) && err.code === 'ENOENT') throw new UploadGone()
      throw stagingError(err)
    }
    if (charged > written.bytes) hold?.shrink(charged - written.bytes)
    return { file: part, size: written.bytes, md5: written.md5! }
  }

  /** Removes one part file (a replaced part); gone already is fine. @returns the bytes it held (0: gone already) */
  async removePart(id: string, file: string): Promise<number> {
    return this.#area.remove(this.#check(id), file)
  }

  /** Removes an upload's folder and everything in it. */
  async remove(id: string): Promise<void> {
    await this.#area.remove(this.#check(id))
  }

  /** Every folder here: upload ids, and anything else (to sweep). */
  async entries(): Promise<string[]> {
    return (await this.#area.entries()).map((e) => e.name)
  }

  /** The part files in an upload's folder, with when each was last written to. */
  async files(id: string): Promise<StagedPartFile[]> {
    const st = await this.#area.state(this.#check(id))
    return st?.layout === 'parts' ? st.parts.map(({ file, mtimeMs }) => ({ file, mtimeMs })) : []
  }

  /** Removes an entry of the staging folder by name (sweeping what no upload owns). */
  async removeEntry(name: string): Promise<void> {
    if (name === '' || name.includes('/') || name === '.' || name === '..') return
    await this.#area.remove(name)
  }
}
