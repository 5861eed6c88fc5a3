/**
 * @module front/connection-spec
 * The one place that turns a configured connection (and what a client brings: its
 * own credentials, a folder) into a backend spec: for HTTP sessions
 * (front/sessions.ts), for gateway users and pass-through logins
 * (front/gateway-login.ts), and for the admin's checks when a gateway user is
 * created (front/admin.ts). Also `specWithRoot`, which narrows a spec to a folder
 * inside it, so that the driver's own containment applies at that folder.
 */
import { join } from 'node:path'
import { ApiError } from '../core/api-error.js'
import { type BackendSpec, type LocalSpec, backendIdentity, parseBackendSpec } from '../core/backend.js'
import { type ConnectionConfig, leavesCredentialsToUsers } from '../core/config.js'
import { isFsError } from '../core/errors.js'
import type { PluginStorageType } from './plugins.js'

/** Storage types that plugins provide (front/plugins.ts). */
export interface PluginStorageTypes {
  storageType(type: string): PluginStorageType | undefined
}

/** A spec and the non-secret identity of the login it stands for (sessions' `backendID`). */
export interface BuiltSpec {
  readonly spec: BackendSpec
  readonly identity: string
}

/** An HTTP `tmp` session's scratch space: `<data_dir>/tmp/<userID>`, created on first use. */
export function tmpSpec(dataDir: string, userID: string): LocalSpec {
  return { type: 'local', root: join(dataDir, 'tmp', userID), createRoot: true }
}

/**
 * A gateway user's `tmp` space: `<data_dir>/gateway-tmp/<name>.<created>`, created on
 * first use. Apart from the HTTP API's tmp spaces on purpose: those take no password,
 * so a gateway user's files must never be one `{"type":"tmp","userID":...}` away. The
 * creation time keeps a user made again under a removed user's name out of its files
 * (and out of the worker's driver for that folder).
 */
export function gatewayTmpSpec(dataDir: string, user: { readonly name: string; readonly created: number }): LocalSpec {
  if (/^\.*$/.test(user.name) || user.name.includes('/') || !Number.isSafeInteger(user.created)) throw new Error(`not a gateway user: ${JSON.stringify(user)}`)
  return { type: 'local', root: join(dataDir, 'gateway-tmp', `${user.name}.${user.created}`), createRoot: true }
}

/** Settings of a connection that are filegate's own, never backend parameters. */
const OWN_SETTINGS = ['label', 'type', 'gateway_passthrough', 'public'] as const

/**
 * True when gateway users may log in as `<user>@<label>` with their own account on
 * this connection: one of sftp, ftp, smb, s3 that fixes no credential, unless it says
 * `"gateway_passthrough": false` (core/config.ts refuses `true` elsewhere).
 */
export function passthroughAllowed(conn: ConnectionConfig): boolean {
  return conn.gateway_passthrough !== false && leavesCredentialsToUsers(conn)
}

/**
 * A configured connection and a client's parameters → a spec; the connection's fixed
 * values override the client's. A `local` connection gives its folder (its password,
 * if any, is checked by the caller, never passed on).
 * @throws ApiError INVALID_INPUT naming a missing or bad parameter
 */
export function connectionSpec(conn: ConnectionConfig, params: Readonly<Record<string, unknown>>, plugins?: PluginStorageTypes): BuiltSpec {
  if (conn.type === 'local') {
    // Only the configured folder: a client never picks a folder of the server's disk.
    const spec: BackendSpec = { type: 'local', root: conn.path as string } // validated absolute by core/config
    return { spec, identity: backendIdentity(spec) }
  }
  const fixed: Record<string, unknown> = { ...conn }
  for (const k of OWN_SETTINGS) delete fixed[k]
  const provided = plugins?.storageType(conn.type)
  if (provided) {
    const { plugin, backend, options } = provided
    const p = backend.parse ? backend.parse({ ...params, ...fixed }, options) : {}
    const spec: BackendSpec = { type: 'plugin', plugin, backend: conn.type, params: p }
    return { spec, identity: backend.identity ? `plugin\0${plugin}\0${conn.type}\0${backend.identity(p)}` : backendIdentity(spec) }
  }
  let spec: BackendSpec
  try {
    spec = parseBackendSpec(conn.type, { ...params, ...fixed })
  } catch (err) {
    // The core names a bad parameter EINVAL; what a login or session request gets wrong is the API's INVALID_INPUT.
    if (isFsError(err) && err.code === 'EINVAL') throw new ApiError('INVALID_INPUT', err.message)
    throw err
  }
  return { spec, identity: backendIdentity(spec) }
}

/**
 * `spec` narrowed to `root` (a canonical path inside it; `/`: unchanged), so that
 * the driver serves that folder as `/` and keeps every path inside it. Local folders
 * are joined; sftp and ftp roots are joined as paths (an empty root is the login
 * folder, so the result stays relative to it); s3 and smb roots are joined without
 * a leading `/` (`bucket/prefix`, `folder/sub`).
 * @throws ApiError INVALID_INPUT for a plugin storage, which has no root filegate knows of
 */
export function specWithRoot(spec: BackendSpec, root: string): BackendSpec {
  if (root === '/') return spec
  const rel = root.slice(1)
  switch (spec.type) {
    case 'local':
      return { ...spec, root: join(spec.root, rel) }
    case 'sftp':
    case 'ftp':
      return { ...spec, root: spec.root === '' ? rel : spec.root === '/' ? root : `${spec.root}/${rel}` }
    case 's3':
    case 'smb':
      return { ...spec, root: spec.root === '' ? rel : `${spec.root}/${rel}` }
    case 'plugin':
      throw new ApiError('INVALID_INPUT', `a storage of type "${spec.backend}" (plugin ${spec.plugin}) can only be served from its root: use "root": "/"`)
  }
}
