/**
 * @module gateways/sftp/attrs
 * Entries as SFTP v3 attributes, and the `ls -l` style long names READDIR carries
 * (OpenSSH's `sftp` prints them as they are for `ls -l`).
 */
import type { FsEntry } from '../../core/view.js'
import type { Attrs } from './wire/codec.js'

const S_IFDIR = 0o040000
const S_IFREG = 0o100000

/** Permission bits shown when the storage keeps none. */
const DEFAULT_MODE = { dir: 0o755, file: 0o644 } as const

export function modeOf(e: FsEntry): number {
  return (e.kind === 'dir' ? S_IFDIR : S_IFREG) | (e.mode ?? DEFAULT_MODE[e.kind])
}

/** No uid/gid: the storages behind a view have no owners to tell. Times only when known. */
export function toAttrs(e: FsEntry): Attrs {
  const base = { mode: modeOf(e), size: e.size }
  if (e.mtimeMs === null) return base
  // SFTP v3 times are unsigned 32-bit seconds: times outside 1970..2106 are clamped.
  const t = Math.min(0xffffffff, Math.max(0, Math.floor(e.mtimeMs / 1000)))
  return { ...base, atime: t, mtime: t }
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
const SIX_MONTHS_MS = 182 * 24 * 3600 * 1000

function permString(mode: number): string {
  const kind = (mode & 0o170000) === S_IFDIR ? 'd' : '-'
  let s = kind
  for (const shift of [6, 3, 0]) {
    const bits = (mode >> shift) & 7
    s += (bits & 4 ? 'r' : '-') + (bits & 2 ? 'w' : '-') + (bits & 1 ? 'x' : '-')
  }
  return s
}

/** `ls -l` date: `Mon DD HH:MM` within six months of now, else `Mon DD  YYYY` (UTC). */
function lsDate(ms: number | null, now: number): string {
  if (ms === null) return 'Jan  1  1970'
  const d = new Date(ms)
  const day = String(d.getUTCDate()).padStart(2, ' ')
  const tail =
    Math.abs(now - ms) < SIX_MONTHS_MS
      ? `${String(d.getUTCHours()).padStart(2, '0')}:${String(d.getUTCMinutes()).padStart(2, '0')}`
      : ` ${d.getUTCFullYear()}`
  return `${MONTHS[d.getUTCMonth()]} ${day} ${tail}`
}

/** e.g. `-rw-r--r--    1 alice    alice        1234 Nov 24 22:01 notes.txt` */
export function longName(e: FsEntry, owner: string, now = Date.now()): string {
  const links = e.kind === 'dir' ? 2 : 1
  return `${permString(modeOf(e))} ${String(links).padStart(4)} ${owner.padEnd(8)} ${owner.padEnd(8)} ${String(e.size).padStart(8)} ${lsDate(e.mtimeMs, now)} ${e.name}`
}
