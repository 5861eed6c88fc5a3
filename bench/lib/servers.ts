/**
 * @module bench/lib/servers
 * The servers under test, each its own process on 127.0.0.1 and a free port:
 * filegate through its CLI (dist/front/main.js, with a temporary data directory),
 * nginx with a generated config, and the plain node reference (bench/ref/). All
 * compare through one small shape, `Server`: a URL, a CPU meter and stop().
 */
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { type AddressInfo, createConnection, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { distDir } from './build.js'
import { ensureCommand } from './debian.js'
import { ROOT, env } from './env.js'
import { cpuSeconds, onCleanup, stop, stopped, tail, track, treeCpuSeconds } from './proc.js'
import { progress } from './report.js'

export interface Server {
  readonly name: string
  /** http://127.0.0.1:port */
  readonly url: string
  readonly pid: number
  /** CPU seconds the server has used so far (all its threads, and for nginx its workers). */
  cpu(): number
  stop(): Promise<void>
}

/** A temp folder removed when the benchmark ends. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `filegate-bench-${prefix}-`))
  onCleanup(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** Where --cpu-prof writes profiles for this benchmark run (BENCH_CPU_PROF=1). */
export function profileDir(server: string): string {
  const dir = join(env.resultsDir, 'profiles', `${process.env.BENCH_NAME ?? 'bench'}-${server}-${process.pid}`)
  mkdirSync(dir, { recursive: true })
  return dir
}

/** Every server started, for the failure report. */
const started: { name: string; child: ChildProcess; output: () => string }[] = []

/** Adds a server started elsewhere (bench/lib/sftp-servers.ts) to the failure report. */
export function noteStarted(name: string, child: ChildProcess, output: () => string): void {
  started.push({ name, child, output })
}

/** The last lines each server printed, and how it ended: printed when a benchmark fails. */
export function serverReport(): string {
  return started
    .map((s) => {
      const how = s.child.exitCode !== null || s.child.signalCode !== null ? `exited (${s.child.exitCode ?? s.child.signalCode})` : 'running'
      return `--- ${s.name} (pid ${s.child.pid}, ${how}), last output:\n${s.output() || '(none)'}`
    })
    .join('\n')
}

/**
 * Waits for the child to print a line `match` accepts; fails if it exits first or takes
 * over `ms`. Keeps the child's last output lines and reports an unexpected exit at once.
 */
function waitForLine<T>(name: string, child: ChildProcess, match: (line: string) => T | null, ms = 30_000): Promise<T> {
  const out: string[] = []
  const keep = (l: string) => {
    out.push(l)
    if (out.length > 60) out.shift()
  }
  const output = () => out.join('\n')
  started.push({ name, child, output })
  return new Promise((resolve, reject) => {
    let done = false
    const finish = (err: Error | null, v?: T) => {
      if (done) return
      done = true
      clearTimeout(timer)
      if (err) reject(err)
      else resolve(v as T)
    }
    tail(child.stderr, 60, keep)
    tail(child.stdout, 60, (line) => {
      keep(line)
      const v = match(line)
      if (v !== null) finish(null, v)
    })
    const timer = setTimeout(() => finish(new Error(`${name} did not start within ${ms / 1000}s: ${output()}`)), ms)
    child.once('exit', (code, sig) => {
      if (!done) setTimeout(() => finish(new Error(`${name} exited (${code ?? sig}) before listening: ${output()}`)), 50)
      else if (!stopped.has(child)) console.error(`\n!!! ${name} (pid ${child.pid}) exited unexpectedly (${code ?? sig}); its last output:\n${output()}\n`)
    })
    child.once('error', (err) => finish(err))
  })
}

function wrap(name: string, child: ChildProcess, url: string, cpu: () => number): Server {
  return {
    name,
    url,
    pid: child.pid!,
    cpu,
    stop: () => stop(child, 5000),
  }
}

/**
 * filegate from its CLI, as `npm start` runs it, with a fresh data directory
 * (and, in `extra`, a config file and environment variables of its own).
 * Per-request log lines are off unless BENCH_LOG_REQUESTS=1 (the references log nothing).
 * `engine`: its HTTP engine (`http_engine`); the server is named "filegate" on the
 * default one and "filegate-node" when node:http is forced.
 */
export async function startFilegate(
  dataDir: string,
  workers = env.workers,
  engine: 'auto' | 'node' = 'auto',
  extra: { readonly config?: string; readonly env?: Readonly<Record<string, string>> } = {},
): Promise<Server> {
  const name = engine === 'node' ? 'filegate-node' : 'filegate'
  const nodeArgs = env.cpuProf ? ['--cpu-prof', '--cpu-prof-dir', profileDir(name)] : []
  const configArgs = extra.config ? ['--config', extra.config] : []
  const child = track(process.execPath, [...nodeArgs, join(distDir(), 'front', 'main.js'), ...configArgs, '--port', '0', '--data-dir', dataDir, '--workers', String(workers)], {
    cwd: ROOT,
    env: {
      ...process.env,
      FILEGATE_LOG_REQUESTS: env.logRequests ? 'true' : 'false',
      FILEGATE_SHUTDOWN_GRACE_SECONDS: '2',
      FILEGATE_LOG_LEVEL: 'info',
      FILEGATE_HTTP_ENGINE: engine,
      FILEGATE_SFTP_PORT: 'off',
      FILEGATE_S3_PORT: 'off',
      ...extra.env,
    },
  })
  const url = await waitForLine(name, child, (line) => {
    try {
      const j = JSON.parse(line) as { msg?: string; url?: string }
      return j.msg === 'filegate listening' && j.url ? j.url : null
    } catch {
      return null
    }
  })
  progress(`${name} listening on ${url} (pid ${child.pid}, ${workers} workers)`)
  return wrap(name, child, url, () => cpuSeconds(child.pid!))
}

/** A tmp session on filegate: the bearer token. */
export async function tmpSession(url: string, userID: string): Promise<string> {
  const res = await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'tmp', userID }) })
  const j = (await res.json()) as { status: string; result?: { authorization: string } }
  if (j.status !== 'ok' || !j.result) throw new Error(`filegate refused a tmp session: ${JSON.stringify(j)}`)
  return j.result.authorization
}

/** The plain node:http + fs reference over `root` (bench/ref/node-server.ts). */
export async function startNodeRef(root: string): Promise<Server> {
  const nodeArgs = env.cpuProf ? ['--cpu-prof', '--cpu-prof-dir', profileDir('node-ref')] : []
  const child = track(process.execPath, [...nodeArgs, '--import', 'tsx', join(ROOT, 'bench', 'ref', 'node-server.ts'), '--root', root], { cwd: ROOT })
  const port = await waitForLine('the node reference server', child, (line) => {
    try {
      const j = JSON.parse(line) as { msg?: string; port?: number }
      return j.msg === 'listening' && j.port ? j.port : null
    } catch {
      return null
    }
  })
  progress(`node reference listening on 127.0.0.1:${port} (pid ${child.pid})`)
  return wrap('node', child, `http://127.0.0.1:${port}`, () => cpuSeconds(child.pid!))
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo
      s.close(() => resolve(port))
    })
  })
}

export async function waitForPort(port: number, child: ChildProcess | null, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms
  for (;;) {
    if (child && child.exitCode !== null) throw new Error(`${what} exited (${child.exitCode}) before listening`)
    const ok = await new Promise<boolean>((r) => {
      const c = createConnection({ host: '127.0.0.1', port }, () => {
        c.destroy()
        r(true)
      })
      c.once('error', () => r(false))
    })
    if (ok) return
    if (Date.now() > deadline) throw new Error(`${what} did not listen on ${port} within ${ms / 1000}s`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/**
 * nginx serving `root` with sendfile (Debian's nginx-light), with a generated config
 * in a temp folder; `null` (and the reason) when nginx is not available.
 */
export async function startNginx(root: string): Promise<Server | { skipped: string }> {
  const found = await ensureCommand('nginx', 'nginx-light')
  if (!found.ok) return { skipped: found.reason }
  const dir = tempDir('nginx')
  const port = await freePort()
  const asRoot = process.getuid?.() === 0
  const conf = `# generated by bench/lib/servers.ts
${asRoot ? 'user nobody nogroup;' : ''}
daemon off;
master_process on;
worker_processes ${env.cores};
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:${port};
    root ${root};
    location / { }
  }
}
`
  writeFileSync(join(dir, 'nginx.conf'), conf)
  const child = track(found.path, ['-e', join(dir, 'error.log'), '-p', dir, '-c', join(dir, 'nginx.conf')], { cwd: dir })
  const errTail = tail(child.stderr)
  started.push({ name: 'nginx', child, output: errTail })
  try {
    await waitForPort(port, child, 'nginx')
  } catch (err) {
    throw new Error(`${(err as Error).message}: ${errTail()}`)
  }
  progress(`nginx listening on 127.0.0.1:${port} (master pid ${child.pid}, ${env.cores} workers, sendfile on)`)
  return wrap('nginx', child, `http://127.0.0.1:${port}`, () => treeCpuSeconds(child.pid!))
}
