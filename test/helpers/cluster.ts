/**
 * A filegate cluster on loopback, set up as docs/deployment.md tells an operator to:
 * PostgreSQL for the state (test/servers/postgres.ts), one server secret made with
 * `head -c 32 /dev/urandom` and handed to every node as a file, one shared staging
 * folder, one SSH host key copied into every node's data folder, N nodes (the compiled
 * CLI, each with a data folder of its own, the environment of deploy/filegate.env),
 * nginx with deploy/nginx.conf in front of the HTTP API and the S3 gateway, HAProxy with
 * deploy/haproxy.cfg in front of the SFTP gateway, and (optionally) nginx's stream
 * module with deploy/nginx-sftp.conf. The storage all nodes serve is a `local`
 * connection on one folder (`root`), standing for the shared storage a cluster serves.
 *
 * On one machine the nodes differ from the guide's only in their addresses: each
 * listens on 127.0.0.1 and ports of its own, and the balancers' address in their
 * `trust_proxy` is 127.0.0.1 (so an SFTP client that goes to a node directly, without a
 * PROXY header, connects from another loopback address). Everything is stopped at
 * `t`'s teardown.
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, copyFileSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'
import { type Postgres, startPostgres } from '../servers/postgres.js'
import { freePort, requireBinary, serverDir, startServer, waitForPort } from '../servers/process.js'
import { fillDeployFile, parseEnvFile } from './deploy-files.js'
import { type SpawnedFilegate, spawnFilegate } from './spawn-filegate.js'

export const ADMIN_PASSWORD = 'cluster admin password'
/** The password of the `files` connection (the shared folder). */
export const FILES_PASSWORD = 'files connection password'
/** The `guarded` connection: a second folder, for tests that lock its logins out. */
export const GUARDED_PASSWORD = 'guarded connection password'

export interface ClusterNode {
  readonly name: string
  /** `http://127.0.0.1:<port>` of the node's HTTP API. */
  readonly url: string
  readonly s3Port: number
  readonly sftpPort: number
  readonly dataDir: string
  readonly proc: SpawnedFilegate
  /** SIGKILLs the node (as a machine going down would) and waits for its end. */
  kill(): Promise<void>
}

export interface Cluster {
  readonly nodes: readonly ClusterNode[]
  /** nginx (deploy/nginx.conf): the HTTP API, every node's `public_url`. */
  readonly http: string
  /** nginx (deploy/nginx.conf): the S3 gateway. */
  readonly s3: string
  /** HAProxy (deploy/haproxy.cfg): the SFTP gateway's port. */
  readonly sftpPort: number
  /** nginx's stream module (deploy/nginx-sftp.conf), when asked for: the SFTP gateway's port. */
  readonly streamSftpPort: number | null
  /** The folder the `files` connection serves on every node. */
  readonly root: string
  /** The shared staging folder. */
  readonly staging: string
  readonly pg: Postgres
}

export interface ClusterOptions {
  readonly nodes?: number
  readonly workers?: number
  /** Also run deploy/nginx-sftp.conf. */
  readonly nginxStream?: boolean
  /** Settings of the config file (over the test's connections and admin password). */
  readonly config?: Record<string, unknown>
  /** The compiled code to run (the benchmarks' copy); the repository's dist/ by default. */
  readonly dist?: string
}

export async function startCluster(t: Test, opts: ClusterOptions = {}): Promise<Cluster> {
  const nginx = requireBinary('/usr/sbin/nginx', 'nginx-light')
  const haproxy = requireBinary('/usr/sbin/haproxy', 'haproxy')
  const n = opts.nodes ?? 3
  const dir = serverDir(t, 'cluster')
  chmodSync(dir, 0o755) // nginx's workers (nobody) reach its temp folders
  const folder = (name: string, mode = 0o700): string => {
    const p = join(dir, name)
    mkdirSync(p, { recursive: true, mode })
    return p
  }
  const root = folder('storage')
  const guarded = folder('guarded')
  const staging = folder('staging')
  const run = folder('run', 0o755)

  // The server secret, made once and handed to every node as a file (docs/deployment.md).
  const secretFile = join(dir, 'secret')
  writeFileSync(secretFile, randomBytes(32), { mode: 0o600 })
  // One SSH host key for every node, made once and copied into each data folder.
  const hostKey = join(dir, 'host_ed25519_key')
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'filegate', '-f', hostKey])
  const configFile = join(dir, 'config.json')
  writeFileSync(
    configFile,
    JSON.stringify({
      admin_password: ADMIN_PASSWORD,
      connections: [
        { label: 'files', type: 'local', path: root, password: FILES_PASSWORD },
        { label: 'guarded', type: 'local', path: guarded, password: GUARDED_PASSWORD },
      ],
      ...opts.config,
    }),
    { mode: 0o600 },
  )

  const [pg, httpPort, s3Port, sftpPort, streamPort] = await Promise.all([startPostgres(t), freePort(), freePort(), freePort(), opts.nginxStream ? freePort() : Promise.resolve(0)])
  const http = `http://127.0.0.1:${httpPort}`

  const startNode = async (i: number): Promise<ClusterNode> => {
      const name = `node${i + 1}`
      const dataDir = folder(`${name}-data`)
      mkdirSync(join(dataDir, 'sftp'), { mode: 0o700 })
      copyFileSync(hostKey, join(dataDir, 'sftp', 'host_ed25519_key'))
      chmodSync(join(dataDir, 'sftp', 'host_ed25519_key'), 0o600)
      const env = parseEnvFile(
        fillDeployFile('filegate.env', { STATE_URL: pg.url, SECRET_FILE: secretFile, STAGING_DIR: staging, DATA_DIR: dataDir, PUBLIC_URL: http, CONFIG_FILE: configFile, BALANCERS: '"127.0.0.1"' }),
      )
      const [nodeSftp, nodeS3] = await Promise.all([freePort(), freePort()])
      const proc = await spawnFilegate({
        dataDir,
        workers: opts.workers ?? 1,
        ...(opts.dist ? { dist: opts.dist } : {}),
        // One machine: each node on loopback and ports of its own; a short grace for the teardown.
        env: { ...env, FILEGATE_HOST: '127.0.0.1', FILEGATE_SFTP_PORT: String(nodeSftp), FILEGATE_S3_PORT: String(nodeS3), FILEGATE_SHUTDOWN_GRACE_SECONDS: '1', FILEGATE_LOG_REQUESTS: 'false' },
      })
      const exited = new Promise<void>((resolve) => (proc.child.exitCode !== null || proc.child.signalCode !== null ? resolve() : proc.child.once('exit', () => resolve())))
      t.teardown(async () => {
        proc.child.kill('SIGTERM')
        const timer = setTimeout(() => proc.child.kill('SIGKILL'), 5000)
        await exited
        clearTimeout(timer)
      })
      await Promise.all([waitForPort(nodeSftp, 15_000, proc.child), waitForPort(nodeS3, 15_000, proc.child)])
      return {
        name,
        url: proc.url,
        s3Port: nodeS3,
        sftpPort: nodeSftp,
        dataDir,
        proc,
        kill: async () => {
          proc.child.kill('SIGKILL')
          await exited
        },
      }
  }
  // All at once: the first to reach PostgreSQL migrates it, the others wait for it.
  const nodes = await Promise.all(Array.from({ length: n }, (_, i) => startNode(i)))

  const perNode = nodes.map((node) => ({
    NODE_NAME: node.name,
    NODE_HTTP: new URL(node.url).host,
    NODE_S3: `127.0.0.1:${node.s3Port}`,
    NODE_SFTP: `127.0.0.1:${node.sftpPort}`,
  }))
  const write = (name: string, text: string): string => {
    const p = join(dir, name)
    writeFileSync(p, text)
    return p
  }
  const nginxConf = write('nginx.conf', fillDeployFile('nginx.conf', { LISTEN_HTTP: `127.0.0.1:${httpPort}`, LISTEN_S3: `127.0.0.1:${s3Port}`, RUN_DIR: run }, perNode))
  const lb = await startServer(t, nginx, ['-c', nginxConf, '-g', 'daemon off;'], { port: httpPort })
  await waitForPort(s3Port, 15_000, lb.child)
  const haproxyCfg = write('haproxy.cfg', fillDeployFile('haproxy.cfg', { LISTEN_SFTP: `127.0.0.1:${sftpPort}`, RUN_DIR: run }, perNode))
  await startServer(t, haproxy, ['-f', haproxyCfg, '-db'], { port: sftpPort })
  if (opts.nginxStream) {
    const streamConf = write('nginx-sftp.conf', fillDeployFile('nginx-sftp.conf', { LISTEN_SFTP: `127.0.0.1:${streamPort}`, RUN_DIR: run }, perNode))
    await startServer(t, nginx, ['-c', streamConf, '-g', 'daemon off;'], { port: streamPort })
  }
  return { nodes, http, s3: `http://127.0.0.1:${s3Port}`, sftpPort, streamSftpPort: opts.nginxStream ? streamPort : null, root, staging, pg }
}

/** A session on the `files` connection, opened at `url`; its bearer token. */
export async function filesSession(url: string): Promise<string> {
  const res = await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ label: 'files', password: FILES_PASSWORD }) })
  const json = (await res.json()) as { result?: { authorization: string } }
  if (res.status !== 200 || !json.result) throw new Error(`login at ${url}: ${res.status} ${JSON.stringify(json)}`)
  return json.result.authorization
}
