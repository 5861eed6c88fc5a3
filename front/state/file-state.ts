/**
 * @module front/state/file-state
 * The embedded state store: a JSON-lines file in the data directory, held in memory.
 * Enough for one node's revoked tokens; a database-backed store replaces it when
 * shares, keys and users arrive (same `StateStore` interface).
 */
import { appendFile, mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { StateStore } from '../../core/state.js'

interface Revoked {
  readonly id: string
  readonly until: number
}

export async function openFileState(dir: string): Promise<StateStore> {
  await mkdir(dir, { recursive: true, mode: 0o700 })
  const file = join(dir, 'revoked-tokens.jsonl')
  const revoked = new Map<string, number>()
  const now = Date.now()
  const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return ''
    throw err
  })
  let stale = 0
  for (const line of text.split('\n')) {
    if (!line.trim()) continue
    try {
      const r = JSON.parse(line) as Revoked
      if (r.until > now) revoked.set(r.id, r.until)
      else stale++
    } catch {
      stale++ // a line cut by a crash mid-append
    }
  }
  if (stale > 0) {
    // Compact: rewrite without expired entries, atomically.
    const tmp = `${file}.tmp`
    await writeFile(tmp, [...revoked].map(([id, until]) => JSON.stringify({ id, until }) + '\n').join(''), { mode: 0o600 })
    await rename(tmp, file)
  }
  return {
    async revokeToken(id, untilMs) {
      if (untilMs <= Date.now()) return
      revoked.set(id, untilMs)
      await appendFile(file, JSON.stringify({ id, until: untilMs } satisfies Revoked) + '\n', { mode: 0o600 })
    },
    async isTokenRevoked(id) {
      const until = revoked.get(id)
      if (until === undefined) return false
      if (until > Date.now()) return true
      revoked.delete(id)
      return false
    },
    async close() {},
  }
}
