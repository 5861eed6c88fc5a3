/**
 * Starting real servers (sshd, vsftpd, smbd, s3rver...) for tests: on 127.0.0.1, a
 * free port, stopped by pid when the test ends. The servers are the Debian packages
 * that `npm test` installs first (scripts/test-deps.sh); a test whose server binary
 * is missing fails with the package to install, it does not skip.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServer, connect } from 'node:net'
import type { Test } from 'tap'

/** A TCP port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => resolve(port))
    })
  })
}

/** Resolves once something accepts connections on the port. */
export async function waitForPort(port: number, timeoutMs = 15_000, child?: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (child && child.exitCode !== null) throw new Error(`the server exited (code ${child.exitCode}) before listening on ${port}`)
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1')
      s.once('connect', () => {
        s.destroy()
        resolve(true)
      })
      s.once('error', () => resolve(false))
    })
    if (ok) return
    if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/**
 * Calls `probe` (a client command against a started server) every 100 ms until it does
 * not throw: a port opens before some servers serve. Throws the last error after `timeoutMs`.
 */
export async function untilServing(probe: () => unknown, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      probe()
      return
    } catch (err) {
      if (Date.now() > deadline) throw err
      await new Promise((r) => setTimeout(r, 100))
    }
  }
}

/** The absolute path of a server binary, or an error naming the Debian package. */
export function requireBinary(path: string, debianPackage: string): string {
  if (existsSync(path)) return path
  throw new Error(`${path} is missing: apt-get install -y ${debianPackage} (npm test's pretest step, scripts/test-deps.sh, installs it)`)
}

export interface Started {
  readonly child: ChildProcess
  /** What the server printed, for failure messages. */
  output(): string
  /** Stops it (SIGTERM, then SIGKILL) and waits for its exit. */
  stop(): Promise<void>
}

/**
 * Spawns a server and waits for its port. It is stopped at `t`'s teardown. Never in
 * its own process group: stopping a group would signal the test runner too.
 */
export async function startServer(
  t: Test,
  cmd: string,
  args: readonly string[],
  opts: { port: number; env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number; uid?: number; gid?: number },
): Promise<Started> {
  const child = spawn(cmd, args, { env: opts.env ?? process.env, cwd: opts.cwd, uid: opts.uid, gid: opts.gid, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout!.on('data', (c: Buffer) => (out = (out + c.toString()).slice(-20_000)))
  child.stderr!.on('data', (c: Buffer) => (out = (out + c.toString()).slice(-20_000)))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 3000)
    await exited
    clearTimeout(timer)
  }
  t.teardown(stop)
  try {
    await waitForPort(opts.port, opts.timeoutMs, child)
  } catch (err) {
    await stop()
    throw new Error(`${(err as Error).message}\n${cmd} said:\n${out}`)
  }
  return { child, output: () => out, stop }
}

/** Runs a command to completion (set-up steps such as adding a user). */
export function run(cmd: string, args: readonly string[], input?: string, env?: NodeJS.ProcessEnv): string {
  return execFileSync(cmd, args, { encoding: 'utf8', input, env, stdio: ['pipe', 'pipe', 'pipe'] })
}

/**
 * A folder of its own for a server's config and keys, removed at teardown. Not
 * `t.testdir()`: a second call in the same test (startTestServer's data folder)
 * would wipe it.
 */
export function serverDir(t: Test, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `filegate-${prefix}-`))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** SIGKILLs every descendant of `pid` (found through /proc), deepest first. */
export function killDescendants(pid: number): void {
  const children = new Map<number, number[]>()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      const list = children.get(ppid) ?? []
      list.push(Number(name))
      children.set(ppid, list)
    } catch {
      // The process ended meanwhile.
    }
  }
  const kill = (p: number): void => {
    for (const c of children.get(p) ?? []) {
      kill(c)
      try {
        process.kill(c, 'SIGKILL')
      } catch {
        // Already gone.
      }
    }
  }
  kill(pid)
}

export interface Restartable {
  /** Stops the server and drops its connections (its per-connection children too), as a machine going down does. */
  stop(): Promise<void>
  /** Runs it again on the same port. */
  start(): Promise<void>
  output(): string
}

/** A server the fault tests can stop and start again on the same port; stopped at teardown. */
export async function startRestartable(t: Test, cmd: string, args: readonly string[], port: number, as?: { uid: number; gid: number }): Promise<Restartable> {
  let server: Started | null = null
  const start = async (): Promise<void> => {
    server = await startServer(t, cmd, args, { port, ...as })
  }
  const stop = async (): Promise<void> => {
    const pid = server?.child.pid
    if (pid !== undefined) killDescendants(pid)
    await server?.stop()
  }
  t.teardown(stop)
  await start()
  return { stop, start, output: () => server?.output() ?? '' }
}
