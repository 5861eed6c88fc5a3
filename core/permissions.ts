/**
 * @module core/permissions
 * The eight permission bits every login has (docs/api.md, "Files"; docs/gateways.md,
 * "Permissions"): an HTTP session, a share link, a gateway user at SFTP, S3 or MCP, an
 * S3 key. One definition for every door: the view every door calls checks them per
 * operation (core/view.ts has the table of which operation needs which bit).
 */
import { FsError } from './errors.js'

export const PERMISSION_NAMES = [
  'can_read',
  'can_create_file',
  'can_create_directory',
  'can_rename',
  'can_move',
  'can_upload',
  'can_delete',
  'can_share',
] as const

export type PermissionName = (typeof PERMISSION_NAMES)[number]

/** As listed in every `ls` answer (docs/api.md, "Files"): all keys, always. */
export type Permissions = { readonly [K in PermissionName]: boolean }

const every = (value: boolean): Permissions => Object.fromEntries(PERMISSION_NAMES.map((n) => [n, value])) as unknown as Permissions

export const FULL_ACCESS: Permissions = every(true)

export const NO_ACCESS: Permissions = every(false)

/** Reading only: what a read-only gateway user may do (`read_only: true`, the shorthand). */
export const READ_ONLY: Permissions = { ...NO_ACCESS, can_read: true }

/** Every bit that changes something: a login with none of them is read-only. */
export function changesNothing(p: Permissions): boolean {
  return PERMISSION_NAMES.every((n) => n === 'can_read' || !p[n])
}

/** The bits both grant: a key narrows its user's bits, never widens them. */
export function intersect(a: Permissions, b: Permissions): Permissions {
  return Object.fromEntries(PERMISSION_NAMES.map((n) => [n, a[n] && b[n]])) as unknown as Permissions
}

/** As stored: bit i is PERMISSION_NAMES[i]. */
export function toBits(p: Permissions): number {
  return PERMISSION_NAMES.reduce((bits, n, i) => (p[n] ? bits | (1 << i) : bits), 0)
}

export function fromBits(bits: number): Permissions {
  return Object.fromEntries(PERMISSION_NAMES.map((n, i) => [n, (bits & (1 << i)) !== 0])) as unknown as Permissions
}

/** A stable short form for keys and logs: the names of the bits granted, comma-separated. */
export function describePermissions(p: Permissions): string {
  return PERMISSION_NAMES.filter((n) => p[n]).join(',') || 'none'
}

/**
 * A gateway user's bits as the state stores keep them: a `permissions` bit field, or
 * (users made before there was one: null) the `read_only` flag alone, which meant
 * reading only, or everything but share links.
 */
export function storedUserPermissions(bits: number | null, readOnly: boolean): Permissions {
  if (bits !== null) return fromBits(bits)
  return readOnly ? READ_ONLY : { ...FULL_ACCESS, can_share: false }
}

/**
 * Whether a login may replace an existing file's content (an upload over it, a write
 * into it, a truncation, a rename or copy onto it): that destroys what was there, so
 * it takes `can_delete` besides `can_upload`. A drop box (upload and create, no delete)
 * adds files and never changes one. Share links decide it by their own `can_write`.
 */
export function mayReplace(p: Permissions): boolean {
  return p.can_upload && p.can_delete
}

/** What a refusal says a bit allows, e.g. "create directories". */
export const PERMISSION_VERBS: { readonly [K in PermissionName]: string } = {
  can_read: 'read or list',
  can_create_file: 'create files',
  can_create_directory: 'create directories',
  can_rename: 'rename',
  can_move: 'move to another folder',
  can_upload: 'upload or change files',
  can_delete: 'delete',
  can_share: 'make share links',
}

/** The refusal of what `right` does not allow (`what`: the operation, when the bit's own verb does not say it). */
export const refusal = (right: PermissionName, path?: string, what = PERMISSION_VERBS[right]): FsError =>
  new FsError('EACCES', `this login may not ${what} (it has no ${right})`, path === undefined ? {} : { path })
