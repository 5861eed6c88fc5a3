/**
 * @module gateways/s3/object-meta
 * The seam between the object operations and what is kept beside an object: its ETag,
 * Content-Type and `x-amz-meta-*` (gateways/s3/meta/ keeps them; docs/s3-gateway.md,
 * "ETags and metadata"). The operations compute the MD5 while streaming and hand it
 * over after a write; reads ask for what was kept. `fallbackMeta` keeps nothing: every
 * object gets a stable ETag of its path, size and time in the multipart form
 * (`<hex>-1`), which no client takes for an MD5.
 */
import { createHash } from 'node:crypto'
import type { FsEntry, ProtocolFs } from '../../core/protocol-fs.js'

export interface ObjectMetaValue {
  /** Unquoted. */
  readonly etag: string
  /** As the writer gave it; absent: none known (a default is picked from the name). */
  readonly contentType?: string
  /** `x-amz-meta-*` without the prefix, names in lower case. */
  readonly userMeta: Readonly<Record<string, string>>
}

export interface ObjectMetaStore {
  get(fs: ProtocolFs, path: string, entry: FsEntry): Promise<ObjectMetaValue>
  /** After the object at `path` was written (`entry`: as committed). */
  put(fs: ProtocolFs, path: string, entry: FsEntry, meta: ObjectMetaValue): Promise<void>
  /** After the object at `path` was deleted. */
  forget(fs: ProtocolFs, path: string): Promise<void>
}

/** The MD5 of nothing: empty objects and folder markers. */
export const EMPTY_MD5 = 'd41d8cd98f00b204e9800998ecf8427e'

export const fallbackMeta: ObjectMetaStore = {
  get: async (_fs, path, entry) => {
    if (entry.size === 0) return { etag: EMPTY_MD5, userMeta: {} }
    const hex = createHash('md5').update(`filegate-etag\0${path}\0${entry.size}\0${entry.mtimeMs ?? 'none'}`).digest('hex')
    return { etag: `${hex}-1`, userMeta: {} }
  },
  put: async () => {},
  forget: async () => {},
}

/** `x-amz-meta-*` of a request. */
export function requestUserMeta(headers: Iterable<readonly [string, string]>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of headers) if (name.startsWith('x-amz-meta-') && name.length > 11) out[name.slice(11)] = value
  return out
}
