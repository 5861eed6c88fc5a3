/**
 * @module front/tus/records
 * The records of resumable uploads (what @tus/file-store keeps of each: length,
 * metadata, creation date) in the state store, as the library's `configstore`: every
 * node sharing the store and the staging folder can resume, finish or terminate an
 * upload another node started, and the expiry sweep goes by these records.
 */
import type { Configstore } from '@tus/file-store'
import type { Upload } from '@tus/server'
import type { StateStore } from '../../core/state.js'

export class StoreConfigstore implements Configstore {
  readonly #state: StateStore

  constructor(state: StateStore) {
    this.#state = state
  }

  async get(id: string): Promise<Upload | undefined> {
    const r = await this.#state.getTusUpload(id)
    return r === null ? undefined : (JSON.parse(r.upload) as Upload)
  }

  async set(id: string, upload: Upload): Promise<void> {
    const created = upload.creation_date ? Date.parse(upload.creation_date) : NaN
    await this.#state.putTusUpload({ id, upload: JSON.stringify(upload), created: Number.isFinite(created) ? created : Date.now() })
  }

  async delete(id: string): Promise<void> {
    await this.#state.deleteTusUpload(id)
  }
}
