/**
 * @module bench/lib/autocannon
 * autocannon as the small-request load generator, run as its own process (its CPU is
 * the client's, measured apart from the server's).
 */
import { join } from 'node:path'
import { ROOT, env } from './env.js'
import { reapedChildrenCpuSeconds, run } from './proc.js'

export interface Autocannon {
  requests: { average: number; total: number }
  latency: { p50: number; p99: number }
  non2xx: number
  errors: number
  timeouts: number
  duration: number
}

export interface Load {
  readonly method: 'GET' | 'POST'
  /** `Name: value` lines. */
  readonly headers: readonly string[]
  readonly body?: string
}

const AUTOCANNON = join(ROOT, 'node_modules', 'autocannon', 'autocannon.js')

/** `env.connections` connections on `url` for `seconds`; the result and the client's CPU seconds. */
export async function cannon(url: string, load: Load, seconds: number): Promise<{ result: Autocannon; clientCpuS: number }> {
  const args = [AUTOCANNON, '--json', '-c', String(env.connections), '-d', String(seconds), '-m', load.method, ...load.headers.flatMap((h) => ['-H', h])]
  if (load.body !== undefined) args.push('-b', load.body)
  args.push(url)
  const c0 = reapedChildrenCpuSeconds()
  const r = await run(process.execPath, args)
  const clientCpuS = reapedChildrenCpuSeconds() - c0
  if (r.code !== 0) throw new Error(`autocannon failed (${r.code ?? r.signal}): ${r.stderr.slice(-1000)}`)
  return { result: JSON.parse(r.stdout) as Autocannon, clientCpuS }
}
