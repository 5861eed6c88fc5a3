/**
 * @module core/plugin
 * The plugin interface (docs/plugins.md). A plugin is an ES module whose default
 * export is a `Plugin`: a name and the hooks it registers. Plugins are enabled by name in
 * the configuration (`plugins`); the built-in ones live in the project, a third-party one
 * is loaded from the absolute path the configuration gives (`{"name", "path"}`), with no
 * change to filegate.
 *
 * Threads. filegate runs a main thread (HTTP, authentication, routing) and a pool of
 * worker threads (storage, bytes). An enabled plugin's module is loaded in the main thread
 * at start-up and in every worker thread: each hook says where it runs, and module state is
 * per thread. A module that throws at load time, or whose `init` throws, stops start-up
 * with a message naming the plugin.
 *
 * Errors are data (core/errors.ts): they are recognised by shape, not class, so a plugin
 * needs no runtime import from filegate. Throw an Error whose `name` is `'FsError'` and
 * whose `code` is one of FS_ERROR_CODES (e.g. `EINVAL` for a bad parameter, `EMEDIA`,
 * `EFBIG`); each door answers it in its own shape (the HTTP API: 400 INVALID_INPUT, 415
 * UNSUPPORTED_MEDIA, 413 TOO_LARGE). The HTTP API also takes `name: 'ApiError'` with one
 * of its codes from a main-thread hook, as plugins written before did. Anything else is
 * a bug: the client gets an internal error without detail, the server logs it, and
 * nothing crashes.
 *
 * Hooks:
 * - `transform`: a download transform. `select` (main thread, before dispatch) reads the
 *   request's query and returns the parameters, or null to leave the download alone; `open`
 *   (worker thread) receives the file's bytes as a stream and returns the new bytes.
 * - `routes`: HTTP endpoints under `/plugins/<name>/`.
 * - `backends`: new storage types: `parse` (main thread, at login) and `create` (worker).
 * - `gateway`: a listener or a set of routes (core/gateway.ts), started and stopped with
 *   the server.
 */
import { pathToFileURL } from 'node:url'
import type { Driver } from './driver.js'
import type { Gateway } from './gateway.js'
import type { HttpReply, HttpRequest } from './http.js'
import type { View } from './view.js'

/** A plugin's name: its key in the configuration and its URL prefix (`/plugins/<name>/`). */
export const PLUGIN_NAME = /^[a-z][a-z0-9_]{0,63}$/

/** Plain data (it is structured-cloned to the worker threads). */
export type PluginOptions = Readonly<Record<string, unknown>>

/** One enabled plugin, as validated by core/config.ts. */
export interface PluginConfig {
  readonly name: string
  /** Absolute path of a third-party plugin's module; absent for a built-in one. */
  readonly path?: string
  /** The plugin's own settings, from the configuration; `{}` when none. */
  readonly options: PluginOptions
}

export type PluginThread = 'main' | 'worker'

/** What `init` and `gateway` receive. */
export interface PluginContext {
  readonly options: PluginOptions
  readonly thread: PluginThread
}

export interface Plugin {
  /** Must equal the name the configuration enables it by. */
  readonly name: string
  /**
   * Runs once in each thread that loads the plugin, before any other hook: validate
   * `options` here (throw with a precise message: start-up stops and names the plugin).
   */
  init?(ctx: PluginContext): void | Promise<void>
  readonly transform?: DownloadTransform
  /**
   * MAIN THREAD. Endpoints, by sub-path: `hello` is served at `/plugins/<name>/hello`,
   * `''` at `/plugins/<name>`. Sub-paths are segments of `A-Z a-z 0-9 . _ ~ -` (not `.` or
   * `..`) joined by `/`.
   */
  readonly routes?: Readonly<Record<string, PluginRoute>>
  /** Storage types, by type name (as a connection's `type` in the configuration). */
  readonly backends?: Readonly<Record<string, PluginBackend>>
  /** MAIN THREAD. A gateway (core/gateway.ts); called once at start-up. */
  gateway?(ctx: PluginContext): Gateway
}

// Download transform ------------------------------------------------------------

/** The file a transform is asked about. */
export interface TransformFile {
  /** Canonical path in the session's storage. */
  readonly path: string
  /** Last path segment. */
  readonly name: string
  /** Media type from the name's extension (`application/octet-stream` when unknown). */
  readonly type: string
}

export interface TransformInput<P = unknown> {
  /** What `select` returned for this request. */
  readonly params: P
  readonly options: PluginOptions
  /** The file, with its size and modification time. */
  readonly file: TransformFile & { readonly size: number; readonly mtimeMs: number | null }
  /**
   * The file's bytes, read from storage as they are pulled: iterate it at most once, and
   * hold only what you need (stop early to stop reading). Chunks are yours.
   */
  readonly body: AsyncIterable<Uint8Array>
  /** Aborted when the client goes away. */
  readonly signal: AbortSignal
}

export interface TransformOutput {
  /** Content-Type of the result, e.g. `text/plain; charset=utf-8`. */
  readonly type: string
  /**
   * The result's bytes. An error thrown while iterating it arrives after the reply's head:
   * the connection is aborted so the client sees a failed download, never a short one.
   */
  readonly body: AsyncIterable<Uint8Array>
}

/**
 * A download transform: `GET /api/files/cat?path=...&<your parameters>`. The reply carries
 * the output's type, no Content-Length, no ETag or Last-Modified (they describe the
 * original), and ignores Range and conditional headers. At most one transform applies to a
 * request: two plugins selecting the same request is a 400.
 */
export interface DownloadTransform<P = unknown> {
  /**
   * MAIN THREAD, before anything is sent to a worker: the parameters (plain data) when the
   * request asks for this transform, null when it does not. Throw an `FsError`-shaped
   * EINVAL for a bad parameter. No I/O: the file has not been looked at yet.
   */
  select?(query: URLSearchParams, file: TransformFile, options: PluginOptions): P | null
  /**
   * WORKER THREAD: the transformed download. Throwing here, before returning, answers a
   * JSON error (e.g. `EMEDIA` → 415); the reply's head is sent only once this resolves.
   */
  open?(input: TransformInput<P>): Promise<TransformOutput>
}

// Routes ------------------------------------------------------------------------

/** Who calls a route that requires a session. */
export interface PluginCaller {
  /** As `GET /api/session` reports it: the same storage login, the same id. */
  readonly backendID: string
  readonly home: string
  /**
   * The caller's view of its storage (core/view.ts), with its rights: what the file
   * endpoints use (paths are canonical: see core/paths.ts).
   */
  readonly view: View
  /** The contract's permission booleans (`can_read`, `can_upload`...). */
  readonly permissions: Readonly<Record<string, boolean>>
}

/**
 * An HTTP endpoint. By default (`auth` absent or `'session'`) filegate authenticates the
 * request exactly as for /api/files/* (401 without a valid credential) and passes the
 * caller; `auth: 'none'` hands the bare request over, and the route does its own checks.
 * Only the listed methods are answered (default GET); errors thrown become the contract's
 * JSON envelope.
 */
export type PluginRoute =
  | {
      readonly methods?: readonly string[]
      readonly auth?: 'session'
      handle(req: HttpRequest, caller: PluginCaller): Promise<HttpReply>
    }
  | {
      readonly methods?: readonly string[]
      readonly auth: 'none'
      handle(req: HttpRequest): Promise<HttpReply>
    }

// Backends ----------------------------------------------------------------------

/** A storage type that a plugin provides. */
export interface PluginBackend {
  /**
   * MAIN THREAD, at login: the session request's parameters (a connection's fixed values
   * applied over the client's) → the parameters the driver needs, plain data and
   * validated. Throw INVALID_INPUT naming the bad parameter. Default: no parameters.
   */
  parse?(params: Readonly<Record<string, unknown>>, options: PluginOptions): PluginOptions
  /**
   * MAIN THREAD: the non-secret identity of a login (server, user, root: never a password
   * or key); sessions with the same identity share a `backendID`. Default: the parameters
   * themselves, so a backend whose parameters hold a secret must provide this.
   */
  identity?(params: PluginOptions): string
  /**
   * WORKER THREAD: a driver (core/driver.ts) for those parameters. Each worker keeps one
   * per distinct parameter set and closes it when idle.
   */
  create(params: PluginOptions, options: PluginOptions): Promise<Driver>
}

/** How a session on a plugin's storage type names its backend: core/backend.ts, with the other specs. */
export { type PluginBackendSpec, isPluginBackendSpec } from './backend.js'

// Loading -----------------------------------------------------------------------

/** A plugin could not be loaded or initialised; the message names it. Start-up stops. */
export class PluginLoadError extends Error {
  readonly plugin: string
  constructor(plugin: string, message: string, opts: { cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause })
    this.name = 'PluginLoadError'
    this.plugin = plugin
  }
}

const reason = (err: unknown): string => (err instanceof Error ? err.message : String(err))

/**
 * Imports a third-party plugin module from its absolute path (the configuration's
 * `path`) and checks its shape. This is filegate's one computed import: the module lies
 * outside the project by definition, so no dependency rule applies to it.
 * @throws PluginLoadError naming the plugin
 */
export async function importPlugin(name: string, path: string): Promise<Plugin> {
  let mod: { default?: unknown }
  try {
    mod = (await import(pathToFileURL(path).href)) as { default?: unknown }
  } catch (err) {
    throw new PluginLoadError(name, `plugin "${name}" failed to load from ${path}: ${reason(err)}`, { cause: err })
  }
  return checkPlugin(mod.default, name, path)
}

const HOOKS = new Set(['name', 'init', 'transform', 'routes', 'backends', 'gateway'])
/** Route sub-paths: segments of unreserved characters, none of them `.` or `..`. */
const SEGMENT = '(?!\\.\\.?(?:/|$))[A-Za-z0-9._~-]+'
export const ROUTE_SUBPATH = new RegExp(`^(?:${SEGMENT}(?:/${SEGMENT})*)?$`)

/**
 * A module's default export → a `Plugin`, or a PluginLoadError saying what is wrong.
 * Checks the shape only; what hooks return is checked where they are called.
 */
export function checkPlugin(value: unknown, name: string, where: string): Plugin {
  const bad = (what: string) => new PluginLoadError(name, `plugin "${name}" (${where}): ${what}`)
  if (value === null || typeof value !== 'object') throw bad('the module has no default export: export default { name, ...hooks }')
  const p = value as Record<string, unknown>
  if (p.name !== name) throw bad(`it is named ${JSON.stringify(p.name)}: its "name" must be "${name}", the name the configuration enables it by`)
  for (const k of Object.keys(p)) if (!HOOKS.has(k)) throw bad(`unknown hook "${k}" (known: ${[...HOOKS].join(', ')})`)
  const fn = (v: unknown, what: string) => {
    if (v !== undefined && typeof v !== 'function') throw bad(`${what} must be a function`)
  }
  const obj = (v: unknown, what: string) => {
    if (v !== undefined && (v === null || typeof v !== 'object' || Array.isArray(v))) throw bad(`${what} must be an object`)
  }
  fn(p.init, '"init"')
  fn(p.gateway, '"gateway"')
  obj(p.transform, '"transform"')
  if (p.transform !== undefined) {
    const t = p.transform as Record<string, unknown>
    fn(t.select, '"transform.select"')
    fn(t.open, '"transform.open"')
  }
  obj(p.routes, '"routes"')
  for (const [sub, r] of Object.entries((p.routes ?? {}) as Record<string, unknown>)) {
    if (!ROUTE_SUBPATH.test(sub)) throw bad(`route ${JSON.stringify(sub)} must be segments of A-Z a-z 0-9 . _ ~ - (not "." or "..") joined by "/"`)
    obj(r, `route "${sub}"`)
    const route = r as Record<string, unknown>
    if (typeof route.handle !== 'function') throw bad(`route "${sub}" needs a "handle" function`)
    if (route.auth !== undefined && route.auth !== 'session' && route.auth !== 'none') throw bad(`route "${sub}": "auth" must be "session" or "none"`)
    if (route.methods !== undefined && (!Array.isArray(route.methods) || !route.methods.every((m) => typeof m === 'string' && /^[A-Z]+$/.test(m)))) {
      throw bad(`route "${sub}": "methods" must be a list of upper-case HTTP methods`)
    }
  }
  obj(p.backends, '"backends"')
  for (const [type, b] of Object.entries((p.backends ?? {}) as Record<string, unknown>)) {
    if (!/^[a-z][a-z0-9_-]{0,31}$/.test(type)) throw bad(`backend type ${JSON.stringify(type)} must be 1 to 32 of a-z, 0-9, "_", "-"`)
    obj(b, `backend "${type}"`)
    fn((b as Record<string, unknown>).parse, `backend "${type}": "parse"`)
    fn((b as Record<string, unknown>).identity, `backend "${type}": "identity"`)
    if (typeof (b as Record<string, unknown>).create !== 'function') throw bad(`backend "${type}" needs a "create" function`)
  }
  return p as unknown as Plugin
}

/**
 * Runs a plugin's `init` for one thread.
 * @throws PluginLoadError naming the plugin
 */
export async function initPlugin(plugin: Plugin, options: PluginOptions, thread: PluginThread): Promise<void> {
  try {
    await plugin.init?.({ options, thread })
  } catch (err) {
    throw new PluginLoadError(plugin.name, `plugin "${plugin.name}" refused to start: ${reason(err)}`, { cause: err })
  }
}
