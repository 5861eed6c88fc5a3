/**
 * Test harness: a real filegate (HTTP listener, worker pool, local disk) on
 * 127.0.0.1 and a free port, with its own data directory, stopped at the end of
 * the test. Plus small HTTP helpers over fetch. Every answer the tests fetch from it
 * is checked against the OpenAPI document (test/helpers/openapi.ts).
 *
 * FILEGATE_HTTP_ENGINE (auto, uws, node) picks the HTTP engine, as it does for the
 * CLI: `npm test` runs the HTTP tests once per engine.
 */
import type { Test } from 'tap'
import { type Config, validateConfig } from '../../core/config.js'
import { type Filegate, startFilegate } from '../../front/app.js'
import { type Logger, silentLogger } from '../../front/log.js'
import { checkAnswers } from './openapi.js'

export interface Running {
  readonly app: Filegate
  readonly url: string
  readonly dataDir: string
  readonly config: Config
}

export async function startTestServer(t: Test, overrides: Record<string, unknown> = {}, logger: Logger = silentLogger): Promise<Running> {
  const dataDir = (overrides.data_dir as string | undefined) ?? t.testdir()
  const engine = process.env.FILEGATE_HTTP_ENGINE
  const config = validateConfig({ port: 0, workers: 1, shutdown_grace_seconds: 2, sftp: { port: 'off' }, s3: { port: 'off' }, ...(engine ? { http_engine: engine } : {}), ...overrides, ...publicLocal(overrides), data_dir: dataDir })
  const app = await startFilegate(config, { logger })
  t.teardown(() => app.close(0))
  const url = `http://127.0.0.1:${app.port}`
  checkAnswers(url) // every answer a test gets is checked against docs/openapi.json
  return { app, url, dataDir, config }
}

/**
 * A local connection needs a "password" or "public": true (core/config.ts); a test's
 * local connection that sets neither is made public, so tests open it with
 * {"type":"local"} alone.
 */
function publicLocal(overrides: Record<string, unknown>): Record<string, unknown> {
  const list = overrides.connections
  if (!Array.isArray(list)) return {}
  return {
    connections: list.map((c: Record<string, unknown>) => (c.type === 'local' && c.password === undefined && c.public === undefined ? { ...c, public: true } : c)),
  }
}

/** Creates a tmp session and returns its bearer token. */
export async function tmpSession(url: string, userID = 'alice'): Promise<string> {
  const res = await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'tmp', userID }) })
  const json = (await res.json()) as { status: string; result: { authorization: string } }
  if (json.status !== 'ok') throw new Error(`session failed: ${JSON.stringify(json)}`)
  return json.result.authorization
}

/** fetch with the bearer token. `query` values may repeat (arrays). */
export function api(url: string, token: string) {
  return (method: string, path: string, query: Record<string, string | string[]> = {}, init: RequestInit = {}) => {
    const qs = new URLSearchParams()
    for (const [k, v] of Object.entries(query)) for (const x of Array.isArray(v) ? v : [v]) qs.append(k, x)
    const headers = new Headers(init.headers)
    headers.set('authorization', `Bearer ${token}`)
    return fetch(`${url}${path}${qs.size ? `?${qs}` : ''}`, { ...init, method, headers })
  }
}
