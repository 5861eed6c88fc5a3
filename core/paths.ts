/**
 * @module core/paths
 * THE path canonicaliser. Every client-supplied path goes through `parseClientPath`
 * exactly once, on the main thread, before anything reaches a worker; drivers and
 * workers only ever see canonical paths.
 *
 * Canonical form: starts with `/`, no trailing `/` (except the root itself, which
 * is `/`), no empty, `.` or `..` segments, no control characters, no backslash.
 * Paths are relative to the session's root: `/` is that root, and nothing can
 * name a place above it.
 */
import { ApiError } from './api-error.js'
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

/**
 * Validates and canonicalises a client path. `//` collapses, `.` is dropped, `..`
 * pops a segment; a `..` that would climb above the root, a control character, a
 * backslash, a relative path or one over 4096 bytes is INVALID_INPUT.
 * @param what the parameter name, for the error message
 */
export function parseClientPath(raw: string | undefined, what = 'path'): ClientPath {
  if (raw === undefined || raw === '') throw new ApiError('INVALID_INPUT', `missing parameter "${what}"`)
  if (Buffer.byteLength(raw, 'utf8') > MAX_PATH_BYTES) {
    throw new ApiError('INVALID_INPUT', `"${what}" is longer than ${MAX_PATH_BYTES} bytes`)
  }
  if (CONTROL.test(raw)) throw new ApiError('INVALID_INPUT', `"${what}" contains a control character`)
  // A lone UTF-16 surrogate has no UTF-8 form: the disk would store U+FFFD, merging names.
  if (!raw.isWellFormed()) throw new ApiError('INVALID_INPUT', `"${what}" is not valid Unicode`)
  if (raw.includes('\\')) throw new ApiError('INVALID_INPUT', `"${what}" contains a backslash`)
  if (!raw.startsWith('/')) throw new ApiError('INVALID_INPUT', `"${what}" must be an absolute path starting with "/"`)
  const out: string[] = []
  for (const seg of raw.split('/')) {
    if (seg === '' || seg === '.') continue
    if (seg === '..') {
      if (out.length === 0) throw new ApiError('INVALID_INPUT', `"${what}" climbs above the root`)
      out.pop()
      continue
    }
    out.push(seg)
  }
  return { path: '/' + out.join('/'), dirHint: raw.endsWith('/') || raw.endsWith('/.') || raw.endsWith('/..') }
}

/**
 * The trailing-slash rule, the same for every endpoint: a path written with a
 * trailing `/` names a directory. The error for such a path that turns out to be a
 * file (callers check the kind, with a stat, only when `dirHint` is set).
 */
export function trailingSlashOnFile(what: string, path: string): ApiError {
  return new ApiError('INVALID_INPUT', `"${what}" ends with "/", which names a directory, but ${path} is a file`)
}

/** True for canonical paths (what workers and drivers accept). */
export function isCanonical(p: string): boolean {
  if (p === '/') return true
  if (!p.startsWith('/') || p.endsWith('/') || CONTROL.test(p) || p.includes('\\')) return false
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
 * A protocol gateway's path (SFTP, S3 keys, MCP arguments): absolute, or relative to
 * `cwd` (canonical) → canonical. As in a chroot, `..` at the root stays at the root.
 * `//` collapses and `.` is dropped. A control character, a backslash, invalid Unicode
 * or over 4096 bytes is EINVAL: such a name is refused, never stored or resolved.
 */
export function resolveProtocolPath(cwd: string, raw: string): string {
  if (Buffer.byteLength(raw, 'utf8') > MAX_PATH_BYTES) throw new FsError('EINVAL', `path longer than ${MAX_PATH_BYTES} bytes`)
  if (CONTROL.test(raw)) throw new FsError('EINVAL', 'the path contains a control character')
  if (!raw.isWellFormed()) throw new FsError('EINVAL', 'the path is not valid Unicode')
  if (raw.includes('\\')) throw new FsError('EINVAL', 'the path contains a backslash')
  const out = raw.startsWith('/') ? [] : cwd.split('/').filter((s) => s !== '')
  for (const seg of raw.split('/')) {
    if (seg === '' || seg === '.') continue
    if (seg === '..') out.pop()
    else out.push(seg)
  }
  return '/' + out.join('/')
}
