/**
 * The world the fuzzer runs in: one real filegate (HTTP API, MCP, and the SFTP and S3
 * gateways on free ports) serving a local folder `root`, next to a folder `rootside`
 * (outside every root; its name starts like the root's, as a prefix check would miss)
 * holding sentinel files with random canary contents. The root has planted symbolic
 * links: to the outside folder and one of its files (absolute and relative), dangling,
 * two in a loop, and `swap`, which a background loop keeps switching between a folder
 * inside the root and the outside folder while operations run.
 *
 * Not tied to tap: the tap tests (test/fuzz/*.test.ts) and `npm run fuzz`
 * (test/fuzz/run.ts) start the same world.
 */
import { randomBytes } from 'node:crypto'
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { validateConfig } from '../../core/config.js'
import { type Filegate, startFilegate } from '../../front/app.js'
import { silentLogger } from '../../front/log.js'

export const ADMIN_PASSWORD = 'fuzzing admin password, long enough'
export const USER = 'fuzzer'
export const USER_PASSWORD = 'fuzzer password 1'
/** A gateway user no door logs in as: the admin API's PATCH is fuzzed on it (a change of USER's bits would end the SFTP door's connection). */
export const PATCHED_USER = 'fuzzer-patched'

/** Links planted in the root, by name: target (relative targets are relative to the root). */
export function plantedLinks(top: string): Record<string, string> {
  return {
    'out-abs': join(top, 'rootside'),
    'out-rel': '../rootside',
    'out-file': join(top, 'rootside', 'secret.txt'),
    'out-file-rel': '../rootside/sub/deep.txt',
    'out-top': '..',
    dangling: join(top, 'rootside', 'missing'),
    'loop-a': 'loop-b',
    'loop-b': 'loop-a',
    'in-dir': 'inner',
    'in-file': 'inner/file.txt',
  }
}

export interface World {
  readonly app: Filegate
  readonly top: string
  readonly root: string
  readonly outside: string
  readonly dataDir: string
  /** Random bytes (hex) that are in every sentinel file outside the root: no answer may contain them. */
  readonly canary: string
  readonly url: string
  readonly sftpPort: number
  readonly s3Endpoint: string
  readonly s3Key: { accessKeyId: string; secretAccessKey: string }
  /** A session token of the local connection (HTTP API and MCP). */
  readonly token: string
  readonly adminToken: string
  /** Restores the planted links and the inside folder (fuzzed operations may remove or move them). */
  replant(): void
  /** Empties the root (but for the planted links) to keep it small. */
  clean(): void
  /** How often `swap` was switched so far. */
  swaps(): number
  close(): Promise<void>
}

async function json(res: Response): Promise<{ result: Record<string, string> }> {
  const body = (await res.json()) as { result: Record<string, string> }
  if (!res.ok) throw new Error(`fuzz world set-up: ${res.status} ${JSON.stringify(body)}`)
  return body
}

export async function startWorld(): Promise<World> {
  const top = mkdtempSync(join(tmpdir(), 'filegate-fuzz-'))
  const root = join(top, 'root')
  const outside = join(top, 'rootside')
  const dataDir = join(top, 'data')
  const canary = randomBytes(16).toString('hex')
  mkdirSync(root)
  mkdirSync(join(top, 'links')) // where the swapping loop makes its new link
  mkdirSync(join(outside, 'sub'), { recursive: true })
  writeFileSync(join(outside, 'secret.txt'), `secret ${canary}\n`)
  writeFileSync(join(outside, 'sub', 'deep.txt'), `deep ${canary}\n`)
  writeFileSync(join(outside, `marker-${canary}`), '') // a listing of the outside folder shows it
  const links = plantedLinks(top)

  const replant = (): void => {
    const inner = join(root, 'inner')
    if (!lstatSync(inner, { throwIfNoEntry: false })?.isDirectory()) {
      rmSync(inner, { recursive: true, force: true }) // a case may have put a file or a link in its place
      mkdirSync(inner)
    }
    rmSync(join(inner, 'file.txt'), { recursive: true, force: true })
    writeFileSync(join(inner, 'file.txt'), 'inside\n')
    for (const [name, target] of Object.entries(links)) {
      const at = join(root, name)
      let now: string | null = null
      try {
        now = readlinkSync(at)
      } catch {}
      if (now === target) continue
      rmSync(at, { recursive: true, force: true })
      symlinkSync(target, at)
    }
  }
  replant()

  // `swap`: replaced atomically (a new link renamed over it), inside ↔ outside, as fast as the loop turns.
  let swaps = 0
  let swapping = true
  const swapLink = join(root, 'swap')
  const swapLoop = (async () => {
    while (swapping) {
      const tmp = join(top, 'links', `swap-${swaps % 2}`)
      try {
        rmSync(tmp, { force: true })
        symlinkSync(swaps % 2 === 0 ? 'inner' : join(top, 'rootside'), tmp)
        renameSync(tmp, swapLink)
        swaps++
      } catch {}
      await new Promise((r) => setTimeout(r, 1))
    }
  })()

  const app = await startFilegate(
    validateConfig({
      port: 0,
      host: '127.0.0.1',
      workers: 2,
      shutdown_grace_seconds: 1,
      data_dir: dataDir,
      admin_password: ADMIN_PASSWORD,
      sftp: { port: 0 },
      s3: { port: 0 },
      connections: [{ label: 'disk', type: 'local', path: root, public: true }],
      ...(process.env.FILEGATE_HTTP_ENGINE ? { http_engine: process.env.FILEGATE_HTTP_ENGINE } : {}),
    }),
    { logger: silentLogger },
  )
  const url = `http://127.0.0.1:${app.port}`
  const adminToken = (await json(await fetch(`${url}/admin/api/session`, { method: 'POST', body: JSON.stringify({ password: ADMIN_PASSWORD }) }))).result.authorization!
  const admin = (path: string, body?: unknown) =>
    fetch(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${adminToken}` }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
  await json(await admin('/admin/api/users', { name: USER, password: USER_PASSWORD, connection: 'disk', root: '/' }))
  await json(await admin('/admin/api/users', { name: PATCHED_USER, password: USER_PASSWORD, connection: 'disk', root: '/' }))
  const key = (await json(await admin(`/admin/api/users/${USER}/s3-keys`))).result
  const token = (await json(await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ label: 'disk' }) }))).result.authorization!

  return {
    app,
    top,
    root,
    outside,
    dataDir,
    canary,
    url,
    sftpPort: app.gateways.find((g) => g.name === 'sftp')!.port!,
    s3Endpoint: `http://127.0.0.1:${app.gateways.find((g) => g.name === 's3')!.port!}`,
    s3Key: { accessKeyId: key.access_key_id!, secretAccessKey: key.secret_access_key! },
    token,
    adminToken,
    replant,
    clean() {
      for (const name of readdirSync(root)) if (!(name in links) && name !== 'swap') rmSync(join(root, name), { recursive: true, force: true })
      replant()
    },
    swaps: () => swaps,
    async close() {
      swapping = false
      await swapLoop
      await app.close(0)
      rmSync(top, { recursive: true, force: true })
    },
  }
}
