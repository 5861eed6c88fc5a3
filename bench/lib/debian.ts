/**
 * @module bench/lib/debian
 * The Debian packages the references need (nginx-light, zip, unzip). When one is
 * missing, the suite installs it if it runs as root with apt-get (unless
 * BENCH_NO_INSTALL=1); otherwise it prints the exact command to run and the
 * benchmark leaves that column out, saying why. A missing reference is never a
 * failure of the suite.
 */
import { existsSync } from 'node:fs'
import { env } from './env.js'
import { run, which } from './proc.js'

export type Found = { readonly ok: true; readonly path: string } | { readonly ok: false; readonly reason: string }

const tried = new Map<string, Promise<Found>>()

/** Finds `cmd` (also in /usr/sbin), installing Debian package `pkg` when allowed. */
export function ensureCommand(cmd: string, pkg: string): Promise<Found> {
  let p = tried.get(cmd)
  if (!p) {
    p = find(cmd, pkg)
    tried.set(cmd, p)
  }
  return p
}

function locate(cmd: string): string | null {
  return which(cmd) ?? (existsSync(`/usr/sbin/${cmd}`) ? `/usr/sbin/${cmd}` : null)
}

async function find(cmd: string, pkg: string): Promise<Found> {
  const have = locate(cmd)
  if (have) return { ok: true, path: have }
  const install = `apt-get install -y ${pkg}`
  const root = process.getuid?.() === 0
  if (env.noInstall || !root || !which('apt-get')) {
    const why = env.noInstall ? 'BENCH_NO_INSTALL is set' : !root ? 'not running as root' : 'apt-get is not available'
    console.log(`${cmd} is missing (${why}); to include it, run:\n${install}`)
    return { ok: false, reason: `${cmd} not installed (run: ${install})` }
  }
  console.log(`${cmd} is missing: installing Debian package ${pkg} (running as root; BENCH_NO_INSTALL=1 prevents this)...`)
  const opts = { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } }
  let r = await run('apt-get', ['install', '-y', '-qq', pkg], opts)
  if (r.code !== 0) {
    // A fresh machine has no package lists yet.
    await run('apt-get', ['update', '-qq'], opts)
    r = await run('apt-get', ['install', '-y', '-qq', pkg], opts)
  }
  const now = locate(cmd)
  if (r.code === 0 && now) return { ok: true, path: now }
  console.log(`installing ${pkg} failed; to include it, run:\n${install}\n${r.stderr.trim().slice(-500)}`)
  return { ok: false, reason: `${cmd} could not be installed (${install} failed)` }
}
