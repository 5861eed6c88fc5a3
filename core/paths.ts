/**
 * @module core/paths
 * The path rules, all of them in this one file: what each door accepts as a path and
 * how it becomes canonical, and what a storage can hold. Each door has its own rule,
 * one function, declared in `DOOR_PATH_RULES` (the doors take their rule from there).
 * Every client-supplied path goes through its door's rule exactly once, on the main
 * thread, before anything reaches a worker; drivers and workers only ever see
 * canonical paths. Nothing here throws a door's error type: each door answers the
 * refusal in its own shape (the HTTP API's one table, MCP's, SFTP's, S3's).
 *
 * | door     | rule                   | `..` above the root | refusal                    |
 * |----------|------------------------|---------------------|----------------------------|
 * | HTTP API | `parseClientPath`      | refused             | FsError EINVAL             |
 * | MCP      | `mcpToolPath`          | refused             | FsError EINVAL             |
 * | SFTP     | `resolveProtocolPath`  | stays at the root   | FsError EINVAL             |
 * | S3       | `s3KeyPath`            | not a walk: refused | KeyRefusal (keys.ts → S3)  |
 *
 * What every door refuses, whatever the storage (`doorRefusal`): a control character,
 * invalid Unicode (a lone surrogate; the SFTP wire marks a name that is not UTF-8 so),
 * over 4096 bytes, and a segment named as an upload in progress (`.filegate-<id>.part`:
 * drivers hide those names from listings, so such a file would vanish from its owner's
 * view).
 * Everything else is a name: a backslash, `:`, `*`, `?` are ordinary characters on a
 * Linux folder, an SFTP server or S3. What a storage cannot hold is its driver's to
 * say (`Features.refusedNameChars`), checked by `checkStorable` in the worker before
 * the driver sees the path (SMB refuses `\ : * ? " < > |`).
 *
 * Canonical form: starts with `/`, no trailing `/` (except the root itself, which
 * is `/`), no empty, `.` or `..` segments, no control characters. Paths are relative
 * to the session's root: `/` is that root, and nothing can name a place above it.
 */
import type { Features } from './driver.js'
import { FsError } from './errors.js'

export const MAX_PATH_BYTES = 4096

export interface ClientPath {
  /** Canonical path. */
  readonly path: string
  /** The client wrote a trailing `/`: it means a directory. */
  readonly dirHint: boolean
}

// C0 controls, DEL and C1 controls.
/** C0 and C1 control characters: refused in paths, and in names shown to people (API keys, OAuth clients, SSH key comments). */
export const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

/** The hidden name an upload is written under until it is complete (workers/drivers/upload-names.ts). */
const TEMP_UPLOAD_NAME = /^\.filegate-[A-Za-z0-9_-]+\.part$/

/** True for the names of uploads in progress (or left by a crash): never listed, never taken from a client. */
export function isTempUploadName(name: string): boolean {
  return TEMP_UPLOAD_NAME.test(name)
}

/**
 * What every door refuses in a client's path, whatever the storage: the end of a
 * sentence whose subject is the path ("is longer than..."), or null when it may go on.
 * The sentence never echoes the input (it may hold characters meant for a log).
 */
function doorRefusal(raw: string): string | null {
  if (Buffer.byteLength(raw, 'utf8') > MAX_PATH_BYTES) return `is longer than ${MAX_PATH_BYTES} bytes`
  if (CONTROL.test(raw)) return 'contains a control character'
  // A lone UTF-16 surrogate has no UTF-8 form: the disk would store U+FFFD, merging names.
  if (!raw.isWellFormed()) return 'is not valid Unicode (UTF-8)'
  return null
}

/** The refusal for a canonical path with a segment named as an upload in progress, or null. */
function reservedRefusal(segs: readonly string[]): string | null {
  return segs.some(isTempUploadName)
    ? 'names a hidden upload in progress (".filegate-<id>.part" names are kept for uploads under way; choose another name)'
    : null
}

/** A refused path: EINVAL, whose message names the parameter (the HTTP API answers 400 INVALID_INPUT). */
const invalid = (message: string): FsError => new FsError('EINVAL', message)

/**
 * The HTTP API's rule. Validates and canonicalises a client path. `//` collapses,
 * `.` is dropped, `..` pops a segment; a `..` that would climb above the root, a
 * relative path, and what `doorRefusal` refuses or an upload's hidden name is
 * EINVAL.
 * @param what the parameter name, for the error message
 */
export function parseClientPath(raw: string | undefined, what = 'path'): ClientPath {
  if (raw === undefined || raw === '') throw invalid(`missing parameter "${what}"`)
  const refused = doorRefusal(raw)
  if (refused !== null) throw invalid(`"${what}" ${refused}`)
  if (!raw.startsWith('/')) throw invalid(`"${what}" must be an absolute path starting with "/"`)
  const out: string[] = []
  for (const seg of raw.split('/')) {
    if (seg === '' || seg === '.') continue
    if (seg === '..') {
      if (out.length === 0) throw invalid(`"${what}" climbs above the root`)
      out.pop()
      continue
    }
    out.push(seg)
  }
  const reserved = reservedRefusal(out)
  if (reserved !== null) throw invalid(`"${what}" ${reserved}`)
  return { path: '/' + out.join('/'), dirHint: raw.endsWith('/') || raw.endsWith('/.') || raw.endsWith('/..') }
}

/**
 * The MCP door's rule: a tool's path argument, absolute or relative to the root, then
 * the HTTP API's rule (`..` above the root is refused, never resolved).
 */
export function mcpToolPath(raw: string, what = 'path'): string {
  return parseClientPath(raw === '' || raw.startsWith('/') ? raw : `/${raw}`, what).path
}

/**
 * The trailing-slash rule, the same for every endpoint: a path written with a
 * trailing `/` names a directory. The error for such a path that turns out to be a
 * file (callers check the kind, with a stat, only when `dirHint` is set).
 */
export function trailingSlashOnFile(what: string, path: string): FsError {
  return invalid(`"${what}" ends with "/", which names a directory, but ${path} is a file`)
}

/** True for canonical paths (what workers and drivers accept). */
export function isCanonical(p: string): boolean {
  if (p === '/') return true
  if (!p.startsWith('/') || p.endsWith('/') || CONTROL.test(p)) return false
  return p
    .slice(1)
    .split('/')
    .every((s) => s !== '' && s !== '.' && s !== '..')
}

/** Joins a canonical directory and one entry name. */
export function joinPath(dir: string, name: string): string {
  return dir === '/' ? `/${name}` : `${dir}/${name}`
}

/** Parent of a canonical path; the root is its own parent. */
export function parentOf(p: string): string {
  const i = p.lastIndexOf('/')
  return i <= 0 ? '/' : p.slice(0, i)
}

/** Last segment of a canonical path; '' for the root. */
export function baseName(p: string): string {
  return p.slice(p.lastIndexOf('/') + 1)
}

/** True when `p` is `ancestor` or lies below it. */
export function isWithin(ancestor: string, p: string): boolean {
  if (ancestor === '/') return true
  return p === ancestor || p.startsWith(ancestor + '/')
}

/** Path of `p` relative to `ancestor` (no leading slash); '' when equal. */
export function relativeTo(ancestor: string, p: string): string {
  if (!isWithin(ancestor, p)) throw new RangeError(`${p} is not within ${ancestor}`)
  return ancestor === '/' ? p.slice(1) : p.slice(ancestor.length + 1)
}

/**
 * The SFTP door's rule: a path, absolute or relative to `cwd` (canonical) → canonical.
 * As in a chroot, `..` at the root stays at the root. `//` collapses and `.` is
 * dropped. What `doorRefusal` refuses, or an upload's hidden name, is EINVAL: such a
 * name is refused, never stored or resolved.
 */
export function resolveProtocolPath(cwd: string, raw: string): string {
  const refused = doorRefusal(raw)
  if (refused !== null) throw new FsError('EINVAL', `the path ${refused}`)
  const out = raw.startsWith('/') ? [] : cwd.split('/').filter((s) => s !== '')
  for (const seg of raw.split('/')) {
    if (seg === '' || seg === '.') continue
    if (seg === '..') out.pop()
    else out.push(seg)
  }
  const reserved = reservedRefusal(out)
  if (reserved !== null) throw new FsError('EINVAL', `the path ${reserved}`)
  return '/' + out.join('/')
}

/** S3's limit on a key's length (UTF-8 bytes). */
export const MAX_S3_KEY_BYTES = 1024

/** Why the S3 door refuses a key; gateways/s3/keys.ts answers it in S3's shape. */
export class KeyRefusal extends Error {
  override readonly name = 'KeyRefusal'
  constructor(
    readonly reason: 'empty' | 'too-long' | 'invalid',
    message: string,
    /** The key's length in UTF-8 bytes (for `too-long`). */
    readonly bytes = 0,
  ) {
    super(message)
  }
}

/** A bucket's directory name: one segment of the root, whatever other doors named it. Null when it cannot be one. */
export function s3BucketPath(name: string): string | null {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || Buffer.byteLength(name) > 255) return null
  if (doorRefusal(name) !== null || isTempUploadName(name)) return null
  return `/${name}`
}

/**
 * The S3 door's rule: a key → its path inside the bucket's directory (`bucketPath`,
 * from `s3BucketPath`). A key is taken verbatim or refused, never resolved, so
 * `a/../../x` is not a walk, it is a key this server cannot store (folders cannot be
 * named `..`). Refused: the empty key, over 1024 bytes, what `doorRefusal` refuses,
 * a segment that is empty, `.` or `..` (a leading `/`, `//`, `a/./b`) or an upload's
 * hidden name. A key ending in `/` is a folder marker.
 */
export function s3KeyPath(bucketPath: string, key: string): { readonly path: string; readonly folder: boolean } {
  if (key === '') throw new KeyRefusal('empty', 'An object key must not be empty.')
  const bytes = Buffer.byteLength(key)
  if (bytes > MAX_S3_KEY_BYTES) throw new KeyRefusal('too-long', 'Your key is too long.', bytes)
  const refused = doorRefusal(key)
  if (refused !== null) throw new KeyRefusal('invalid', `The object key ${refused}, which this server cannot store.`)
  const folder = key.endsWith('/')
  const segs = (folder ? key.slice(0, -1) : key).split('/')
  if (segs.some((s) => s === '' || s === '.' || s === '..')) {
    throw new KeyRefusal('invalid', 'Object keys with an empty, "." or ".." path segment cannot be stored on this server (its folders cannot have those names).')
  }
  const reserved = reservedRefusal(segs)
  if (reserved !== null) throw new KeyRefusal('invalid', `The object key ${reserved}.`)
  const path = `${bucketPath}/${segs.join('/')}`
  if (Buffer.byteLength(path) > MAX_PATH_BYTES) throw new KeyRefusal('too-long', 'Your key is too long.', bytes)
  return { path, folder }
}

/**
 * Each door's path rule, declared once: the door takes its rule from here (and from
 * nowhere else), so what a door accepts is read in one place.
 */
export const DOOR_PATH_RULES = {
  /** The HTTP API (and what the admin API names, e.g. a gateway user's root). */
  http: parseClientPath,
  /** The MCP server's tool and resource arguments. */
  mcp: mcpToolPath,
  /** The SFTP server: relative to the session's directory, chroot-like at the root. */
  sftp: resolveProtocolPath,
  /** The S3 endpoint: a bucket's key, verbatim or refused (`s3BucketPath` names the bucket's folder). */
  s3: s3KeyPath,
} as const

/** The first character of `s` that a storage with these features cannot hold in a name, or null. */
export function unstorableChar(features: Pick<Features, 'refusedNameChars'>, s: string): string | null {
  const refused = features.refusedNameChars ?? ''
  if (refused === '') return null
  for (const c of s) if (refused.includes(c)) return c
  return null
}

/**
 * The storage's rule, checked in the worker before a driver sees a canonical path:
 * a character the storage cannot hold in a name is EINVAL, named in the message.
 * Everything else was the door's to refuse.
 */
export function checkStorable(features: Pick<Features, 'refusedNameChars'>, path: string): void {
  const c = unstorableChar(features, path)
  if (c !== null) {
    const shown = c === '\\' ? 'a backslash (\\)' : `"${c}"`
    throw new FsError('EINVAL', `this storage cannot hold ${shown} in a name (it refuses any of ${(features.refusedNameChars ?? '').split('').join(' ')})`, { path })
  }
}
