/**
 * @module bench/lib/curl
 * curl as the bulk-transfer client: a C program writing to /dev/null (or reading a
 * file from the page cache), so the client costs little next to the server. Each
 * call also reports the clients' own CPU seconds.
 */
import { ensureCommand } from './debian.js'
import { type Finished, reapedChildrenCpuSeconds, run } from './proc.js'

let curl: string | null = null

/** Finds curl (installing Debian's package when allowed); without it these benchmarks cannot run at all. */
export async function requireCurl(): Promise<void> {
  const found = await ensureCommand('curl', 'curl')
  if (!found.ok) throw new Error(`curl is required: ${found.reason}`)
  curl = found.path
}

function curlPath(): string {
  if (!curl) throw new Error('requireCurl() was not called')
  return curl
}

export interface Transfer {
  /** Wall seconds from the first curl's start to the last one's exit. */
  readonly wallS: number
  /** Bytes moved, all clients together. */
  readonly bytes: number
  /** CPU seconds of the curl processes. */
  readonly clientCpuS: number
}

const headerArgs = (headers: readonly string[]) => headers.flatMap((h) => ['-H', h])

function check(r: Finished, what: string, expect: (code: number, size: number) => string | null): number {
  const last = r.stdout.trim().split('\n').pop() ?? ''
  const [code, size] = last.split(' ').map(Number) as [number, number]
  const problem = r.code !== 0 ? `curl exited with ${r.code ?? r.signal}: ${r.stderr.trim()}` : expect(code, size)
  if (problem) throw new Error(`${what}: ${problem}`)
  return size
}

/**
 * `clients` concurrent GETs of `url`, each body to `out` (default /dev/null); each must
 * be 200 with `size` bytes (any size when null).
 */
export async function download(url: string, headers: readonly string[], clients: number, size: number | null, out = '/dev/null'): Promise<Transfer> {
  const args = ['-sS', '--noproxy', '*', '-o', out, '-w', '%{http_code} %{size_download}\n', ...headerArgs(headers), url]
  const c0 = reapedChildrenCpuSeconds()
  const t0 = performance.now()
  const done = await Promise.all(Array.from({ length: clients }, () => run(curlPath(), args)))
  const wallS = (performance.now() - t0) / 1000
  const clientCpuS = reapedChildrenCpuSeconds() - c0
  let bytes = 0
  for (const r of done) bytes += check(r, `GET ${url}`, (code, got) => (code !== 200 ? `HTTP ${code}` : size !== null && got !== size ? `${got} bytes instead of ${size}` : null))
  return { wallS, bytes, clientCpuS }
}

/** One chunked POST of `file` (curl -T, Transfer-Encoding: chunked); the reply must be 2xx. Returns the reply body too. */
export async function uploadChunked(url: string, file: string, headers: readonly string[]): Promise<Transfer & { reply: string }> {
  const args = ['-sS', '--noproxy', '*', '-X', 'POST', '-T', file, '-H', 'Transfer-Encoding: chunked', '-H', 'Expect:', ...headerArgs(headers), '-w', '\n%{http_code} %{size_upload}\n', url]
  const c0 = reapedChildrenCpuSeconds()
  const t0 = performance.now()
  const r = await run(curlPath(), args)
  const wallS = (performance.now() - t0) / 1000
  const clientCpuS = reapedChildrenCpuSeconds() - c0
  const bytes = check(r, `POST ${url}`, (code) => (code < 200 || code > 299 ? `HTTP ${code}: ${r.stdout.slice(0, 500)}` : null))
  return { wallS, bytes, clientCpuS, reply: r.stdout.trim().split('\n')[0] ?? '' }
}
