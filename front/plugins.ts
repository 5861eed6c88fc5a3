/**
 * @module front/plugins
 * MAIN THREAD. The enabled plugins (core/plugin.ts), loaded at start-up before anything
 * else starts: built-in plugins' main halves from the table below, third-party modules
 * from the paths the configuration gives. A plugin that is unknown, fails to import, has
 * the wrong shape or refuses its options stops start-up with a message naming it.
 *
 * The host then serves the composition root (front/app.ts) and the routes: which
 * download transform a request selects, the plugins' routes under `/plugins/<name>/`,
 * their gateways, and their storage types. The worker threads load the same list on
 * their side (workers/plugins.ts).
 */
import { ApiError } from '../core/api-error.js'
import { ConfigError } from '../core/config.js'
import type { Gateway } from '../core/gateway.js'
import type { TransformRequest } from '../core/messages.js'
import {
  type Plugin,
  type PluginBackend,
  type PluginConfig,
  PluginLoadError,
  type PluginOptions,
  type PluginRoute,
  type TransformFile,
  importPlugin,
  initPlugin,
} from '../core/plugin.js'
import { imageAsciiMain } from './plugins/plg_image_ascii.js'
import { imageThumbnailMain } from './plugins/plg_image_thumbnail.js'

/** Built-in plugins' main halves, by name (their worker halves: workers/plugins.ts). */
export const BUILT_IN_MAIN_HALVES: ReadonlyMap<string, Plugin> = new Map([
  [imageAsciiMain.name, imageAsciiMain],
  [imageThumbnailMain.name, imageThumbnailMain],
])

/** Storage types filegate itself answers to: no plugin may take one. */
const OWN_TYPES: ReadonlySet<string> = new Set(['tmp', 'local', 's3', 'sftp', 'ftp', 'smb', 'plugin'])

export interface MountedRoute {
  readonly plugin: string
  /** Full URL path: `/plugins/<name>/<sub-path>`. */
  readonly path: string
  readonly route: PluginRoute
}

export interface PluginStorageType {
  readonly plugin: string
  readonly backend: PluginBackend
  readonly options: PluginOptions
}

interface Loaded {
  readonly plugin: Plugin
  readonly options: PluginOptions
}

export class PluginHost {
  /** What the worker threads load (workers/pool.ts passes it on). */
  readonly enabled: readonly PluginConfig[]
  readonly routes: readonly MountedRoute[]
  readonly gateways: readonly Gateway[]
  readonly #loaded: readonly Loaded[]
  readonly #types: ReadonlyMap<string, PluginStorageType>

  constructor(enabled: readonly PluginConfig[], loaded: readonly Loaded[], gateways: readonly Gateway[]) {
    this.enabled = enabled
    this.#loaded = loaded
    this.gateways = gateways
    const routes: MountedRoute[] = []
    const types = new Map<string, PluginStorageType>()
    for (const { plugin, options } of loaded) {
      for (const [sub, route] of Object.entries(plugin.routes ?? {})) {
        routes.push({ plugin: plugin.name, path: sub === '' ? `/plugins/${plugin.name}` : `/plugins/${plugin.name}/${sub}`, route })
      }
      for (const [type, backend] of Object.entries(plugin.backends ?? {})) {
        if (OWN_TYPES.has(type)) throw new PluginLoadError(plugin.name, `plugin "${plugin.name}": storage type "${type}" is one of filegate's own`)
        const other = types.get(type)
        if (other) throw new PluginLoadError(plugin.name, `plugin "${plugin.name}": storage type "${type}" is already provided by plugin "${other.plugin}"`)
        types.set(type, { plugin: plugin.name, backend, options })
      }
    }
    this.routes = routes
    this.#types = types
  }

  /**
   * The download transform a request asks for, with its parameters, or null. At most one:
   * two plugins selecting the same request is INVALID_INPUT.
   * @throws ApiError INVALID_INPUT (a plugin's parameter check, or two transforms)
   */
  selectTransform(query: URLSearchParams, file: TransformFile): TransformRequest | null {
    const chosen: TransformRequest[] = []
    for (const { plugin, options } of this.#loaded) {
      const t = plugin.transform
      if (!t?.select) continue
      const params = t.select(query, file, options)
      if (params !== null && params !== undefined) chosen.push({ plugin: plugin.name, params })
    }
    if (chosen.length > 1) {
      throw new ApiError('INVALID_INPUT', `one download transform at a time: ${chosen.map((c) => c.plugin).join(' and ')} both apply to this request`)
    }
    return chosen[0] ?? null
  }

  /** The plugin storage type `type`, if an enabled plugin provides it. */
  storageType(type: string): PluginStorageType | undefined {
    return this.#types.get(type)
  }
}

/** No plugins: for tests and tools that build a server by hand. */
export const NO_PLUGINS = new PluginHost([], [], [])

/**
 * Loads and initialises every enabled plugin in this (the main) thread, in order.
 * @throws ConfigError for a name that is neither built in nor given a path
 * @throws PluginLoadError naming the plugin that failed
 */
export async function loadPlugins(configs: readonly PluginConfig[], builtIns: ReadonlyMap<string, Plugin> = BUILT_IN_MAIN_HALVES): Promise<PluginHost> {
  const loaded: Loaded[] = []
  const gateways: Gateway[] = []
  for (const c of configs) {
    let plugin: Plugin
    if (c.path === undefined) {
      const builtIn = builtIns.get(c.name)
      if (!builtIn) {
        const known = [...builtIns.keys()].join(', ') || 'none'
        throw new ConfigError(`plugins: no built-in plugin is named "${c.name}" (built in: ${known}); a third-party plugin needs {"name", "path"}`)
      }
      plugin = builtIn
    } else {
      if (builtIns.has(c.name)) throw new ConfigError(`plugins: "${c.name}" is a built-in plugin's name; give your plugin another one`)
      plugin = await importPlugin(c.name, c.path)
    }
    await initPlugin(plugin, c.options, 'main')
    if (plugin.gateway) {
      try {
        gateways.push(plugin.gateway({ options: c.options, thread: 'main' }))
      } catch (err) {
        throw new PluginLoadError(c.name, `plugin "${c.name}" could not create its gateway: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
      }
    }
    loaded.push({ plugin, options: c.options })
  }
  return new PluginHost(configs, loaded, gateways)
}
