/**
 * @module core/backend
 * What a worker needs to reach one storage: the backend's type and its
 * parameters, already validated and with the connection's fixed values applied.
 * A spec travels inside the sealed session token and inside every request
 * message; workers cache one driver per `backendKey`.
 */
import { createHash } from 'node:crypto'

/** A folder of the server's own disk (`local` connections and `tmp` spaces). */
export interface LocalSpec {
  readonly type: 'local'
  /** Absolute folder on the server's disk. */
  readonly root: string
  /** Create the root folder on first use (tmp spaces). */
  readonly createRoot?: boolean
}

/** Every backend a worker can open. Later backends (s3, sftp, ftp, smb) join this union. */
export type BackendSpec = LocalSpec

/** Stable cache key for a spec: same parameters, same key. Contains secrets' hash only. */
export function backendKey(spec: BackendSpec): string {
  return createHash('sha256').update(stableJson(spec)).digest('base64url')
}

/** JSON with sorted keys, so equal objects give equal strings. */
export function stableJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null'
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`
  const o = v as Record<string, unknown>
  return `{${Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${stableJson(o[k])}`)
    .join(',')}}`
}
