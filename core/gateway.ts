/**
 * @module core/gateway
 * The seam for protocol gateways (SFTP, S3, MCP): each is a listener or a set of
 * HTTP routes that translates its protocol into Storage calls. Gateways import
 * only core/; the composition root (front/app.ts) starts and stops them.
 */
import type { HttpHandler } from './http.js'
import type { BackendSpec } from './backend.js'
import type { Storage } from './storage.js'

export interface GatewayContext {
  /** The storage for a backend, served by the worker pool. */
  storageFor(spec: BackendSpec): Storage
  log(level: 'debug' | 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>): void
}

export interface Gateway {
  readonly name: string
  /** HTTP routes the gateway serves on the main port, by path prefix (e.g. `/mcp`). */
  readonly routes?: Readonly<Record<string, HttpHandler>>
  /** Starts the gateway's own listener, if it has one. */
  start(ctx: GatewayContext): Promise<void>
  stop(): Promise<void>
}
