/**
 * @module front/tus/staging-store
 * The tus data store of filegate: each upload's bytes are one staged file (core/staged.ts,
 * layout `file`: `<staging_dir>/tus/<id>`) written at offsets on a worker thread, its
 * record (length, metadata, creation date) in the state store (records.ts). The main
 * thread only streams the request body to the worker: it opens, stats and removes no
 * staged file itself, and the commit (uploads.ts) reads the file on a worker too.
 *
 * A write keeps the cause of a failure the client should hear (the library answers every
 * failed write with the same "500 Something went wrong"): a disk with no space left is
 * ENOSPC, answered 507 by filegate's envelope, and the bytes staged so far stay: the
 * client resumes from the offset HEAD tells once space is back.
 */
import type { Readable } from 'node:stream'
import { DataStore, ERRORS, Upload } from '@tus/server'
import { isFsError, stagingError } from '../../core/errors.js'
import type { StagedArea } from '../../core/staged.js'
import type { StagingHold } from '../../core/staging-quota.js'
import type { StoreConfigstore } from './records.js'

/** What a write of upload `id` is charged to: its hold, and the bytes charged already for this request (its declared length). */
export type ChargeOf = (id: string) => { readonly hold: StagingHold; readonly reserved: number } | undefined

export class StagingStore extends DataStore {
  readonly #area: StagedArea
  readonly #records: StoreConfigstore
  readonly #expiryMs: number
  readonly #chargeOf: ChargeOf

  constructor(opts: { readonly area: StagedArea; readonly records: StoreConfigstore; readonly expiryMs: number; readonly chargeOf?: ChargeOf }) {
    super()
    this.#area = opts.area
    this.#records = opts.records
    this.#expiryMs = opts.expiryMs
    this.#chargeOf = opts.chargeOf ?? (() => undefined)
    this.extensions = ['creation', 'creation-with-upload', 'creation-defer-length', 'termination', 'expiration']
  }

  /** The staged bytes' size of upload `id`; null when none are staged. */
  async stagedSize(id: string): Promise<number | null> {
    const st = await this.#area.state(id)
    return st?.layout === 'file' ? st.size : null
  }

  override async create(upload: Upload): Promise<Upload> {
    await this.#area.create(upload.id, 'file')
    await this.#records.set(upload.id, upload)
    return upload
  }

  override async remove(id: string): Promise<void> {
    if ((await this.#area.state(id)) === null) throw ERRORS.FILE_NOT_FOUND
    await this.#area.remove(id)
    await this.#records.delete(id)
  }

  /**
   * Appends `readable` at `offset`, each byte charged to the upload's hold
   * (core/staging-quota.ts) before it goes to the worker that writes it; @returns the new
   * offset. Over a limit, the bytes staged so far stay (the client resumes from the
   * offset HEAD tells).
   */
  override async write(readable: Readable, id: string, offset: number): Promise<number> {
    const charge = this.#chargeOf(id)
    let charged = charge?.reserved ?? 0
    let received = 0
    async function* counted(): AsyncIterable<Uint8Array> {
      for await (const chunk of readable as AsyncIterable<Buffer>) {
        received += chunk.length
        if (charge && received > charged) {
          const n = received - charged
          charged = received
          await charge.hold.grow(n)
        }
        yield chunk
      }
    }
    try {
      const { bytes } = await this.#area.write(id, { offset, handOver: true }, counted())
      charge?.hold.setTo(offset + bytes)
      return offset + bytes
    } catch (err) {
      // What is on disk is what stays staged, and what is counted.
      if (charge) charge.hold.setTo((await this.stagedSize(id).catch(() => null)) ?? 0)
      if (isFsError(err)) throw err // a staging limit, a full disk: answered as such
      const told = stagingError(err)
      throw told === err ? ERRORS.FILE_WRITE_ERROR : told
    }
  }

  override async getUpload(id: string): Promise<Upload> {
    const record = await this.#records.get(id)
    if (!record) throw ERRORS.FILE_NOT_FOUND
    const size = await this.stagedSize(id)
    if (size === null) throw ERRORS.FILE_NO_LONGER_EXISTS
    return new Upload({
      id,
      ...(record.size === undefined ? {} : { size: record.size }),
      offset: size,
      ...(record.metadata === undefined ? {} : { metadata: record.metadata }),
      ...(record.creation_date === undefined ? {} : { creation_date: record.creation_date }),
      storage: { type: 'file', path: id },
    })
  }

  override async declareUploadLength(id: string, length: number): Promise<void> {
    const record = await this.#records.get(id)
    if (!record) throw ERRORS.FILE_NOT_FOUND
    record.size = length
    await this.#records.set(id, record)
  }

  /** filegate sweeps by its own rules (uploads.ts): the library's own expiry pass has nothing to do. */
  override async deleteExpired(): Promise<number> {
    return 0
  }

  override getExpiration(): number {
    return this.#expiryMs
  }
}
