/**
 * @module front/tus/staging-store
 * The tus staging folder: @tus/file-store, whose `write` keeps the cause of a failure
 * that the client should hear. The library answers every failed write with the same
 * "500 Something went wrong"; a disk with no space left is ENOSPC here, answered 507 by
 * filegate's envelope, and the bytes staged so far stay: the client resumes from the
 * offset HEAD tells once space is back.
 */
import { createWriteStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { type Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { FileStore } from '@tus/file-store'
import { ERRORS } from '@tus/server'
import { isFsError, stagingError } from '../../core/errors.js'
import type { StagingHold } from '../../core/staging-quota.js'

/** What a write of upload `id` is charged to: its hold, and the bytes charged already for this request (its declared length). */
export type ChargeOf = (id: string) => { readonly hold: StagingHold; readonly reserved: number } | undefined

export class StagingStore extends FileStore {
  readonly #chargeOf: ChargeOf

  constructor(opts: ConstructorParameters<typeof FileStore>[0] & { readonly chargeOf?: ChargeOf }) {
    const { chargeOf, ...rest } = opts
    super(rest)
    this.#chargeOf = chargeOf ?? (() => undefined)
  }

  /**
   * Appends `readable` at `offset` (as FileStore does), each byte charged to the upload's
   * hold (core/staging-quota.ts) before it is written; @returns the new offset. Over a
   * limit, the bytes staged so far stay (the client resumes from the offset HEAD tells).
   */
  override async write(readable: Readable, id: string, offset: number): Promise<number> {
    const charge = this.#chargeOf(id)
    let charged = charge?.reserved ?? 0
    let received = 0
    const count = new Transform({
      transform(chunk: Buffer, _enc, done) {
        received += chunk.length
        if (!charge || received <= charged) return done(null, chunk)
        const n = received - charged
        charged = received
        charge.hold.grow(n).then(() => done(null, chunk), done)
      },
    })
    const file = join(this.directory, id)
    try {
      await pipeline(readable, count, createWriteStream(file, { flags: 'r+', start: offset }))
    } catch (err) {
      // What is on disk is what stays staged, and what is counted.
      if (charge) charge.hold.setTo(await stat(file).then((st) => st.size, () => 0))
      if (isFsError(err)) throw err // a staging limit: answered as such
      const told = stagingError(err)
      throw told === err ? ERRORS.FILE_WRITE_ERROR : told
    }
    charge?.hold.setTo(offset + received)
    return offset + received
  }
}
