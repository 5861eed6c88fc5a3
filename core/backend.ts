/**
 * @module core/backend
 * What a worker needs to reach one storage: the backend's type and its
 * parameters, validated, with the connection's fixed values applied
 * (docs/configuration.md, "Backends"). A spec travels inside the sealed session token and
 * inside every request message; workers cache one driver per `backendKey`.
 *
 * Validation happens here, once, on the main thread (`parseBackendSpec`), with
 * messages precise enough for a client to fix its request; drivers trust specs.
 */
import { createHash } from 'node:crypto'
import { FsError } from './errors.js'

/** A folder of the server's own disk (`local` connections and `tmp` spaces). */
export interface LocalSpec {
  readonly type: 'local'
  /** Absolute folder on the server's disk. */
  readonly root: string
  /** Create the root folder on first use (tmp spaces). */
  readonly createRoot?: boolean
}

export interface S3Spec {
  readonly type: 's3'
  readonly accessKeyId: string
  readonly secretAccessKey: string
  readonly region: string
  /** e.g. `http://127.0.0.1:9000`; absent: AWS. */
  readonly endpoint?: string
  /** Path-style addressing (required by most S3-compatible servers). */
  readonly forcePathStyle: boolean
  /** `bucket[/prefix]`; '' lists the buckets at `/`. */
  readonly root: string
  /**
   * Keys asked per listing request (ListObjectsV2 `max-keys`, 1-1000; absent: 1000): some
   * S3-compatible servers answer large pages slowly or cap them lower.
   */
  readonly listChunk?: number
}

export interface SftpSpec {
  readonly type: 'sftp'
  readonly hostname: string
  readonly port: number
  readonly username: string
  readonly password?: string
  readonly privateKey?: string
  readonly passphrase?: string
  /** `SHA256:<base64>` fingerprint; the server's key must match when given. */
  readonly hostkey?: string
  /** Remote folder served as `/`; '' is the login folder. */
  readonly root: string
}

export interface FtpSpec {
  readonly type: 'ftp'
  readonly hostname: string
  readonly port: number
  readonly username: string
  readonly password: string
  /** Explicit FTPS (AUTH TLS). */
  readonly secure: boolean
  readonly root: string
}

export interface SmbSpec {
  readonly type: 'smb'
  readonly hostname: string
  readonly port: number
  readonly share: string
  readonly domain: string
  readonly username: string
  readonly password: string
  readonly root: string
}

/** How a session on a plugin's storage type names its backend (inside the session token). */
export interface PluginBackendSpec {
  readonly type: 'plugin'
  readonly plugin: string
  /** The storage type, as the plugin's `backends` key. */
  readonly backend: string
  /** The plugin's own parameters (core/plugin.ts `PluginOptions`). */
  readonly params: Readonly<Record<string, unknown>>
}

export const isPluginBackendSpec = (x: unknown): x is PluginBackendSpec => {
  const o = x as Partial<PluginBackendSpec> | null
  return (
    typeof o === 'object' &&
    o !== null &&
    o.type === 'plugin' &&
    typeof o.plugin === 'string' &&
    typeof o.backend === 'string' &&
    typeof o.params === 'object' &&
    o.params !== null
  )
}

/** Every backend a worker can open; `plugin`: a storage type an enabled plugin provides. */
export type BackendSpec = LocalSpec | S3Spec | SftpSpec | FtpSpec | SmbSpec | PluginBackendSpec
export type BackendType = BackendSpec['type']

/** Stable cache key for a spec: same parameters, same key. */
export function backendKey(spec: BackendSpec): string {
  return createHash('sha256').update(stableJson(spec)).digest('base64url')
}

/**
 * The non-secret identity of a spec: (type, server, user, root). Same login, same
 * identity; it never contains a password or key.
 */
export function backendIdentity(spec: BackendSpec): string {
  switch (spec.type) {
    case 'local':
      return `local\0${spec.root}`
    case 's3':
      return `s3\0${spec.endpoint ?? 'aws'}\0${spec.region}\0${spec.accessKeyId}\0${spec.root}`
    case 'smb':
      return `smb\0${spec.hostname}:${spec.port}\0${spec.share}\0${spec.domain}\\${spec.username}\0${spec.root}`
    case 'plugin': // sessions use the plugin's own `identity` hook when it has one (front/sessions.ts)
      return `plugin\0${spec.plugin}\0${spec.backend}\0${stableJson(spec.params)}`
    default:
      return `${spec.type}\0${spec.hostname}:${spec.port}\0${spec.username}\0${spec.root}`
  }
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

// Validation -----------------------------------------------------------------

type Params = Readonly<Record<string, unknown>>

/** A parameter the caller got wrong: EINVAL, whose message names it (the HTTP API answers 400 INVALID_INPUT). */
const bad = (msg: string) => new FsError('EINVAL', msg)

function text(p: Params, key: string, opts: { required?: boolean; dflt?: string; max?: number } = {}): string | undefined {
  const v = p[key]
  if (v === undefined || v === null || v === '') {
    if (opts.required) throw bad(`missing "${key}"`)
    return opts.dflt
  }
  if (typeof v !== 'string') throw bad(`"${key}" must be a string`)
  if (v.length > (opts.max ?? 4096)) throw bad(`"${key}" is too long`)
  if (/[\u0000-\u001f]/.test(v) && key !== 'private_key') throw bad(`"${key}" contains a control character`)
  return v
}

function port(p: Params, dflt: number): number {
  const v = p.port
  if (v === undefined || v === null || v === '') return dflt
  const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 65535) throw bad('"port" must be a port number (1-65535)')
  return n
}

function whole(p: Params, key: string, min: number, max: number): number | undefined {
  const v = p[key]
  if (v === undefined || v === null || v === '') return undefined
  const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) throw bad(`"${key}" must be a whole number from ${min} to ${max}`)
  return n
}

function flag(p: Params, key: string, dflt: boolean): boolean {
  const v = p[key]
  if (v === undefined || v === null || v === '') return dflt
  if (typeof v === 'boolean') return v
  if (v === 'true' || v === 'false') return v === 'true'
  throw bad(`"${key}" must be true or false`)
}

const HOST = /^[A-Za-z0-9.\-:[\]_]{1,253}$/

function host(p: Params): string {
  const h = text(p, 'hostname', { required: true })!
  if (!HOST.test(h)) throw bad('"hostname" must be a host name or an IP address')
  return h
}

/** A remote folder: '' (the backend's default), or a path without `..` segments. */
function root(p: Params): string {
  const r = text(p, 'path', { dflt: '' })!
  const segs = r.split('/').filter((s) => s !== '' && s !== '.')
  if (segs.includes('..')) throw bad('"path" must not contain ".."')
  if (r.includes('\\')) throw bad('"path" must use "/" as separator')
  return segs.length === 0 ? (r.startsWith('/') ? '/' : '') : (r.startsWith('/') ? '/' : '') + segs.join('/')
}

/**
 * A session request's parameters (the connection's fixed values already applied over
 * the client's) → a spec. `local` is not accepted here: its folder comes from the
 * configuration only.
 * @throws FsError EINVAL naming the parameter
 */
export function parseBackendSpec(type: string, p: Params): BackendSpec {
  switch (type) {
    case 's3': {
      const endpoint = text(p, 'endpoint')
      if (endpoint !== undefined && !/^https?:\/\/[^\s/]+(\/.*)?$/.test(endpoint)) throw bad('"endpoint" must be an http(s) URL')
      const spec: S3Spec = {
        type,
        accessKeyId: text(p, 'access_key_id', { required: true })!,
        secretAccessKey: text(p, 'secret_access_key', { required: true })!,
        region: text(p, 'region', { dflt: 'us-east-1' })!,
        forcePathStyle: flag(p, 'path_style', endpoint !== undefined),
        root: root(p).replace(/^\//, ''),
      }
      const listChunk = whole(p, 'list_chunk', 1, 1000)
      return { ...spec, ...(endpoint === undefined ? {} : { endpoint }), ...(listChunk === undefined ? {} : { listChunk }) }
    }
    case 'sftp': {
      const password = text(p, 'password')
      const privateKey = text(p, 'private_key', { max: 65536 })
      if (password === undefined && privateKey === undefined) throw bad('give "password" or "private_key"')
      const passphrase = text(p, 'passphrase')
      const hostkey = text(p, 'hostkey')
      if (hostkey !== undefined && !/^SHA256:[A-Za-z0-9+/]{43}=?$/.test(hostkey)) throw bad('"hostkey" must be a SHA256 fingerprint ("SHA256:..." as ssh-keygen -l prints it)')
      return {
        type,
        hostname: host(p),
        port: port(p, 22),
        username: text(p, 'username', { required: true })!,
        root: root(p),
        ...(password === undefined ? {} : { password }),
        ...(privateKey === undefined ? {} : { privateKey }),
        ...(passphrase === undefined ? {} : { passphrase }),
        ...(hostkey === undefined ? {} : { hostkey }),
      }
    }
    case 'ftp':
      return {
        type,
        hostname: host(p),
        port: port(p, 21),
        username: text(p, 'username', { dflt: 'anonymous' })!,
        password: text(p, 'password', { dflt: '' })!,
        secure: flag(p, 'secure', false),
        root: root(p),
      }
    case 'smb':
      return {
        type,
        hostname: host(p),
        port: port(p, 445),
        share: text(p, 'share', { required: true })!,
        domain: text(p, 'domain', { dflt: 'WORKGROUP' })!,
        username: text(p, 'username', { required: true })!,
        password: text(p, 'password', { dflt: '' })!,
        root: root(p).replace(/^\//, ''),
      }
    default:
      throw bad(`unknown backend type "${type}"`)
  }
}
