/**
 * @module front/http/engine
 * Which HTTP engine serves: uWebSockets.js where a native build loads (the fast one),
 * else node:http. `http_engine` "auto" tries uWS and falls back with a warning that
 * names what was tried; "uws" or "node" force one (a forced uWS that cannot load
 * stops start-up).
 */
import type { Config } from '../../core/config.js'
import type { HttpServer, ServerOptions } from './exchange.js'
import { listenNode } from './node.js'
import { listenUws, loadUws } from './uws.js'

export interface EngineInfo {
  readonly engine: 'uws' | 'node'
  /** The package (uWS) or runtime (node:http) that serves. */
  readonly version: string
  /** Set when "auto" fell back to node:http: what was tried and why it failed. */
  readonly fallback?: string
}

export function pickEngine(setting: Config['http_engine']): EngineInfo {
  const node: EngineInfo = { engine: 'node', version: `node:http (Node ${process.versions.node})` }
  if (setting === 'node') return node
  try {
    return { engine: 'uws', version: loadUws().version }
  } catch (err) {
    const why = `no native uWebSockets.js build loads on Node ${process.versions.node} ${process.platform}-${process.arch}: ${(err as Error).message}`
    if (setting === 'uws') throw new Error(`http_engine is "uws" but ${why}`)
    return { ...node, fallback: `${why}; serving with the node:http engine instead` }
  }
}

export function listenWith(info: EngineInfo, host: string, port: number, opts: ServerOptions): Promise<HttpServer> {
  return info.engine === 'uws' ? listenUws(host, port, opts) : listenNode(host, port, opts)
}
