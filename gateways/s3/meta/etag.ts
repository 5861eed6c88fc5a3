/**
 * @module gateways/s3/meta/etag
 * The ETag of a file the gateway knows no MD5 of (written by another door, or changed
 * since): stable while the file keeps its size and modification time, and shaped as a
 * multipart ETag (`<32 hex>-1`) so that no client takes it for the content's MD5
 * (rclone and the aws CLI compare only ETags without `-` to an MD5).
 */
import { createHash } from 'node:crypto'
import type { FsEntry } from '../../../core/view.js'

/** The MD5 of nothing: the true ETag of every empty object, whoever wrote it. */
export const EMPTY_MD5 = 'd41d8cd98f00b204e9800998ecf8427e'

/** `identity`: the view's (View.identity). Unquoted. An empty file gets its true MD5. */
export function stableEtag(identity: string, path: string, entry: Pick<FsEntry, 'size' | 'mtimeMs'>): string {
  if (entry.size === 0) return EMPTY_MD5
  const hex = createHash('md5').update(`filegate-etag\0${identity}\0${path}\0${entry.size}\0${entry.mtimeMs ?? 'none'}`).digest('hex')
  return `${hex}-1`
}

/** An ETag as S3 sends it in headers and XML: in double quotes. */
export function quoteEtag(etag: string): string {
  return `"${etag}"`
}

/** An ETag a client sent (quoted or not; `W/` dropped) → unquoted. */
export function unquoteEtag(raw: string): string {
  const s = raw.trim().replace(/^W\//, '')
  return s.length >= 2 && s.startsWith('"') && s.endsWith('"') ? s.slice(1, -1) : s
}
