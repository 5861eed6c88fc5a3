/**
 * filegate as its own process (the compiled CLI, dist/front/main.js), so that its
 * RSS and CPU are its own: for the tests and benchmarks that measure them. Resolves
 * once the server logs its URL; the caller stops the child.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

export interface SpawnedFilegate {
  readonly url: string
  readonly child: ChildProcess
  /** Every line it logged to stdout so far (JSON lines). */
  readonly output: () => string
}

export async function spawnFilegate(opts: { dataDir: string; workers: number; env?: Record<string, string>; args?: readonly string[]; dist?: string }): Promise<SpawnedFilegate> {
  const main = join(opts.dist ?? join(ROOT, 'dist'), 'front', 'main.js')
  if (!existsSync(main)) throw new Error('dist/ is missing: build first (npm run build)')
  const child = spawn(process.execPath, [main, '--port', '0', '--data-dir', opts.dataDir, '--workers', String(opts.workers), ...(opts.args ?? [])], {
    cwd: ROOT,
    // The SFTP and S3 gateways off unless asked: parallel runs would fight over their default ports.
    env: { ...process.env, FILEGATE_LOG_REQUESTS: 'false', FILEGATE_SFTP_PORT: 'off', FILEGATE_S3_PORT: 'off', ...opts.env },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let buf = ''
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (c: Buffer) => {
      buf += c.toString()
      const m = /"url":"(http:[^"]+)"/.exec(buf)
      if (m) resolve(m[1]!)
    })
    child.once('exit', (code) => reject(new Error(`filegate exited (${code}) before listening: ${buf}`)))
  })
  return { url, child, output: () => buf }
}
