/**
 * @module front/tus/staging-store
 * The tus staging folder: @tus/file-store, whose `write` keeps the cause of a failure
 * that the client should hear. The library answers every failed write with the same
 * "500 Something went wrong"; a disk with no space left is ENOSPC here, answered 507 by
 * filegate's envelope, and the bytes staged so far stay: the client resumes from the
 * offset HEAD tells once space is back.
 */
import { createWriteStream } from 'node:fs'
import { join } from 'node:path'
import { type Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { FileStore } from '@tus/file-store'
import { ERRORS } from '@tus/server'
import { stagingError } from '../../core/errors.js'

export class StagingStore extends FileStore {
  /** Appends `readable` at `offset` (as FileStore does); @returns the new offset. */
  override async write(readable: Readable, id: string, offset: number): Promise<number> {
    let received = 0
    const count = new Transform({
      transform(chunk: Buffer, _enc, done) {
        received += chunk.length
        done(null, chunk)
      },
    })
    try {
      await pipeline(readable, count, createWriteStream(join(this.directory, id), { flags: 'r+', start: offset }))
    } catch (err) {
      const told = stagingError(err)
      throw told === err ? ERRORS.FILE_WRITE_ERROR : told
    }
    return offset + received
  }
}
