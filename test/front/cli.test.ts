/**
 * The service as an operator runs it: the command line, its configuration sources,
 * its logs and its graceful shutdown, in a child process.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdir, stat, writeFile } from 'node:fs/promises'
import http from 'node:http'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

interface Proc {
  readonly child: ChildProcess
  readonly lines: Record<string, unknown>[]
  readonly stderr: () => string
  readonly exit: Promise<number | null>
  /** Resolves with the first log line whose msg is `msg`. */
  waitFor(msg: string): Promise<Record<string, unknown>>
}

function run(t: Test, args: string[], env: Record<string, string> = {}): Proc {
  const child = spawn(process.execPath, ['--import', 'tsx', 'front/main.ts', ...args], {
    cwd: ROOT,
    // The gateways' own ports are fixed by default: other tests run at the same time.
    env: { ...process.env, FILEGATE_SFTP_PORT: 'off', FILEGATE_S3_PORT: 'off', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const lines: Record<string, unknown>[] = []
  let err = ''
  const waiters: { msg: string; resolve: (l: Record<string, unknown>) => void }[] = []
  const onLine = (text: string) => {
    for (const raw of text.split('\n')) {
      if (!raw.trim()) continue
      let line: Record<string, unknown>
      try {
        line = JSON.parse(raw) as Record<string, unknown>
      } catch {
        continue
      }
      lines.push(line)
      for (const w of waiters.filter((w) => w.msg === line.msg)) w.resolve(line)
    }
  }
  let outBuf = ''
  child.stdout!.on('data', (c: Buffer) => {
    outBuf += c.toString()
    const i = outBuf.lastIndexOf('\n')
    if (i >= 0) {
      onLine(outBuf.slice(0, i))
      outBuf = outBuf.slice(i + 1)
    }
  })
  child.stderr!.on('data', (c: Buffer) => {
    err += c.toString()
    onLine(c.toString())
  })
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL')
  })
  return {
    child,
    lines,
    stderr: () => err,
    exit,
    waitFor: (msg) => {
      const seen = lines.find((l) => l.msg === msg)
      if (seen) return Promise.resolve(seen)
      return new Promise((resolve, reject) => {
        waiters.push({ msg, resolve })
        void exit.then((code) => reject(new Error(`exited (${code}) before logging "${msg}": ${err}`)))
      })
    },
  }
}

const portOf = (line: Record<string, unknown>) => Number(new URL(String(line.url)).port)

async function session(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/api/session`, { method: 'POST', body: '{"type":"tmp","userID":"op"}' })
  return ((await res.json()) as { result: { authorization: string } }).result.authorization
}

t.test('starts from flags, logs its HTTP engine and one line per request without secrets', async (t) => {
  const dir = t.testdir()
  const p = run(t, ['--port', '0', '--data-dir', join(dir, 'data'), '--workers', '1'])
  const port = portOf(await p.waitFor('filegate listening'))
  const engine = p.lines.filter((l) => l.engine !== undefined)
  t.equal(engine.length, 1, 'one line says which HTTP engine serves')
  t.match(engine[0], { engine: process.env.FILEGATE_HTTP_ENGINE === 'node' ? 'node' : /^(uws|node)$/ })
  t.ok(port > 0, 'listens on the port the OS picked')
  const token = await session(port)
  const res = await fetch(`http://127.0.0.1:${port}/api/files/ls?path=/`, { headers: { authorization: `Bearer ${token}`, 'x-request-id': 'op-trace-1' } })
  t.equal(res.status, 200)
  await res.arrayBuffer()
  const deadline = Date.now() + 5000
  while (!p.lines.some((l) => l.requestId === 'op-trace-1') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
  const log = p.lines.find((l) => l.requestId === 'op-trace-1')
  t.match(log, { msg: 'request', method: 'GET', path: '/api/files/ls', status: 200, bytes: Number, ms: Number }, 'request log line')
  const all = JSON.stringify(p.lines) + p.stderr()
  t.notOk(all.includes(token), 'the token never appears in the logs')
  t.equal(((await stat(join(dir, 'data', 'state', 'secret'))).mode & 0o777).toString(8), '600', 'secret is 0600')
  p.child.kill('SIGTERM')
  t.equal(await p.exit, 0, 'SIGTERM exits cleanly')
})

t.test('environment variables and the config file', async (t) => {
  const dir = t.testdir()
  await writeFile(join(dir, 'cfg.json'), JSON.stringify({ port: 0, workers: 1, session: { ttl_seconds: 60 } }))
  const p = run(t, [], { FILEGATE_CONFIG: join(dir, 'cfg.json'), FILEGATE_DATA_DIR: join(dir, 'envdata'), FILEGATE_HOST: '127.0.0.1' })
  const line = await p.waitFor('filegate listening')
  t.equal(line.data_dir, join(dir, 'envdata'), 'FILEGATE_DATA_DIR is used')
  t.equal(new URL(String(line.url)).hostname, '127.0.0.1')
  p.child.kill('SIGINT')
  t.equal(await p.exit, 0, 'SIGINT exits cleanly')
})

t.test('bad configuration stops start-up with a clear message', async (t) => {
  const dir = t.testdir()
  await writeFile(join(dir, 'bad.json'), '{"port": "eighty"}')
  const p = run(t, ['--config', join(dir, 'bad.json'), '--data-dir', dir])
  t.equal(await p.exit, 1)
  t.match(p.stderr(), /configuration error: port must be an integer/)
  const q = run(t, ['--bogus'])
  t.equal(await q.exit, 1)
  t.match(q.stderr(), /unknown argument "--bogus"/)
  const r = run(t, ['--port', '0', '--data-dir', dir], { FILEGATE_WORKERS: 'many' })
  t.equal(await r.exit, 1)
  t.match(r.stderr(), /FILEGATE_WORKERS must be a whole number/)
})

t.test('FILEGATE_HTTP_ENGINE picks the HTTP engine', async (t) => {
  const dir = t.testdir()
  const p = run(t, ['--port', '0', '--data-dir', join(dir, 'data'), '--workers', '1'], { FILEGATE_HTTP_ENGINE: 'node' })
  t.match(await p.waitFor('HTTP engine'), { level: 'info', engine: 'node', version: /^node:http/ }, 'says it serves with node:http')
  const port = portOf(await p.waitFor('filegate listening'))
  const res = await fetch(`http://127.0.0.1:${port}/healthz`)
  t.equal(res.status, 200, 'and serves')
  await res.arrayBuffer()
  p.child.kill('SIGTERM')
  t.equal(await p.exit, 0)

  const bad = run(t, ['--port', '0', '--data-dir', join(dir, 'bad')], { FILEGATE_HTTP_ENGINE: 'fast' })
  t.equal(await bad.exit, 1, 'an unknown engine stops start-up')
  t.match(bad.stderr(), /http_engine must be one of auto, uws, node/)
})

t.test('SIGTERM lets a transfer in flight finish, then exits', async (t) => {
  const dir = t.testdir()
  const p = run(t, ['--port', '0', '--data-dir', join(dir, 'data'), '--workers', '1'])
  const port = portOf(await p.waitFor('filegate listening'))
  const token = await session(port)
  const size = 48 * 1024 * 1024
  await mkdir(join(dir, 'data', 'tmp', 'op'), { recursive: true })
  await writeFile(join(dir, 'data', 'tmp', 'op', 'big.bin'), randomBytes(size))
  const got = await new Promise<number>((resolve, reject) => {
    http.get(`http://127.0.0.1:${port}/api/files/cat?path=/big.bin`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      let n = 0
      res.once('data', () => {
        // The client is mid-download when the signal arrives; it goes on slowly.
        res.pause()
        p.child.kill('SIGTERM')
        setTimeout(() => res.resume(), 300)
      })
      res.on('data', (c: Buffer) => (n += c.length))
      res.on('end', () => resolve(n))
      res.on('error', reject)
    }).on('error', reject)
  })
  t.equal(got, size, 'the download in flight completed')
  await p.waitFor('shutting down')
  t.equal(await p.exit, 0, 'then the process exits')
  await t.rejects(fetch(`http://127.0.0.1:${port}/healthz`), 'and no longer listens')
})
