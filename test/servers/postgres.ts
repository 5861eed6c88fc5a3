/**
 * @module test/servers/postgres
 * A throwaway PostgreSQL server for tests (docs/testing.md): Debian's
 * PostgreSQL 15 binaries, a fresh cluster in a folder of its own owned by the
 * `postgres` system user, listening on 127.0.0.1 and a free port (no Unix socket
 * outside that folder), password authentication for one role made for this run,
 * one database. Stopped and removed when the test ends; `stop`/`start` restart it
 * on the same port and data (for fault tests). Needs root and the Debian package
 * `postgresql`. Safe to run in parallel.
 */
import { randomBytes } from 'node:crypto'
import { chmodSync, chownSync, existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'
import { freePort, requireBinary, run, serverDir, startRestartable, untilServing } from './process.js'

const BIN = '/usr/lib/postgresql/15/bin'

export interface Postgres {
  readonly port: number
  readonly user: string
  readonly password: string
  readonly database: string
  /** `postgres://user:password@127.0.0.1:port/database`: what `FILEGATE_STATE_URL` takes. */
  readonly url: string
  /** Stops the server (connections dropped); `start` runs it again on the same port and data. */
  stop(): Promise<void>
  start(): Promise<void>
  output(): string
  /** Runs SQL as the superuser through psql (set-up and checks); returns its unaligned output. */
  psql(sql: string): string
}

export async function startPostgres(t: Test): Promise<Postgres> {
  const initdb = requireBinary(join(BIN, 'initdb'), 'postgresql')
  const postgresBin = requireBinary(join(BIN, 'postgres'), 'postgresql')
  requireBinary('/usr/bin/psql', 'postgresql-client')
  const pgUid = Number(run('id', ['-u', 'postgres']).trim())
  const pgGid = Number(run('id', ['-g', 'postgres']).trim())
  const dir = serverDir(t, 'postgres')
  chmodSync(dir, 0o755)
  const data = join(dir, 'data')
  const sock = join(dir, 'sock')
  for (const d of [data, sock]) {
    mkdirSync(d, { mode: 0o700 })
    chownSync(d, pgUid, pgGid)
  }
  const superPassword = randomBytes(18).toString('base64url')
  const pwfile = join(dir, 'pw')
  writeFileSync(pwfile, superPassword, { mode: 0o600 })
  chownSync(pwfile, pgUid, pgGid)
  run('runuser', ['-u', 'postgres', '--', initdb, '-D', data, '-U', 'postgres', '--pwfile', pwfile, '-A', 'scram-sha-256', '-E', 'UTF8', '--locale', 'C.UTF-8'])
  const port = await freePort()
  const server = await startRestartable(
    t,
    postgresBin,
    ['-D', data, '-c', 'listen_addresses=127.0.0.1', '-c', `port=${port}`, '-c', `unix_socket_directories=${sock}`, '-c', 'fsync=off', '-c', 'max_connections=200'],
    port,
    { uid: pgUid, gid: pgGid },
  )
  const psql = (sql: string, database = 'postgres'): string =>
    run('/usr/bin/psql', ['-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', database, '-c', sql], undefined, {
      ...process.env,
      PGPASSWORD: superPassword,
    })
  // The port opens before PostgreSQL takes queries ("the database system is starting up").
  const ready = (): Promise<void> => untilServing(() => psql('SELECT 1'), 30_000)
  await ready()
  const user = `fg_${randomBytes(4).toString('hex')}`
  const password = randomBytes(18).toString('base64url')
  const database = `fg_${randomBytes(4).toString('hex')}`
  psql(`CREATE ROLE ${user} LOGIN PASSWORD '${password}'`)
  psql(`CREATE DATABASE ${database} OWNER ${user}`)
  if (!existsSync(data)) throw new Error('postgres: no data folder after initdb')
  return {
    port,
    user,
    password,
    database,
    url: `postgres://${user}:${password}@127.0.0.1:${port}/${database}`,
    stop: server.stop,
    start: async () => {
      await server.start()
      await ready()
    },
    output: server.output,
    psql: (sql) => psql(sql, database),
  }
}
