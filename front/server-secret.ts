/**
 * @module front/server-secret
 * The server secret: 32 random bytes generated on first start and kept in the
 * data directory (mode 0600). Tokens are sealed under it; losing it logs
 * everyone out, leaking it lets anyone mint sessions.
 */
import { randomBytes } from 'node:crypto'
import { chmod, link, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

export async function loadOrCreateSecret(stateDir: string): Promise<Buffer> {
  await mkdir(stateDir, { recursive: true, mode: 0o700 })
  const file = join(stateDir, 'secret')
  const existing = await readSecret(file)
  if (existing) return existing
  // Written aside and linked into place: two processes starting at once agree on one.
  const tmp = `${file}.${process.pid}.tmp`
  await writeFile(tmp, randomBytes(32), { mode: 0o600 })
  try {
    await link(tmp, file)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
  } finally {
    await rm(tmp, { force: true })
  }
  return (await readSecret(file))!
}

async function readSecret(file: string): Promise<Buffer | null> {
  let buf: Buffer
  try {
    buf = await readFile(file)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw err
  }
  if (buf.byteLength !== 32) throw new Error(`${file} is not a 32-byte secret: fix or remove it (removing logs every session out)`)
  if (((await stat(file)).mode & 0o077) !== 0) await chmod(file, 0o600)
  return buf
}
