/**
 * @module core/state/tus-uploads
 * Resumable (tus) uploads' records (front/tus/). Part of the state store (core/state.ts).
 */

/** A resumable (tus) upload's record: what @tus/file-store keeps of it (its configstore). */
export interface TusUploadRecord {
  /** The upload's id, also the name of its staged file. */
  readonly id: string
  /** The library's record of the upload (offset excluded: the staged file has it), JSON. */
  readonly upload: string
  readonly created: number
}

export interface TusUploadStore {
  /** Creates or replaces the record of an upload. */
  putTusUpload(upload: TusUploadRecord): Promise<void>
  getTusUpload(id: string): Promise<TusUploadRecord | null>
  /** @returns false when there was no such upload */
  deleteTusUpload(id: string): Promise<boolean>
  /** Ids of the uploads created before `beforeMs`, oldest first. */
  expiredTusUploads(beforeMs: number): Promise<string[]>
}
