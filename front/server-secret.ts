/**
 * @module front/server-secret
 * The server secret: 32 random bytes generated on first start and kept in the
 * data directory (mode 0600), or read from `secret_file` (the same file on every
 * node of a cluster; never written). Tokens are sealed under it; losing it logs
 * everyone out, leaking it lets anyone mint sessions.
 */
import { randomBytes } from 'node:crypto'
import { chmod, link, mkdir, open, readFile, rm, stat, writeFile } from 'node:fs/promises'
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

/**
 * The secret in `secret_file`: 32 bytes, raw, or written as 64 hex digits or 44 base64
 * characters (surrounding whitespace ignored). A file group or others may read or
 * write is refused, as is anything else; the message never shows the file's content.
 */
export async function readSecretFile(file: string): Promise<Buffer> {
  const fh = await open(file, 'r').catch((err: NodeJS.ErrnoException) => {
    throw new Error(`secret_file ${file} cannot be read: ${err.code ?? err.message}`)
  })
  try {
    const st = await fh.stat()
    if (!st.isFile()) throw new Error(`secret_file ${file} is not a regular file`)
    if ((st.mode & 0o077) !== 0) {
      throw new Error(`secret_file ${file} is open to group or others (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}): make it readable by filegate's user only (chmod 600)`)
    }
    const raw = await fh.readFile()
    if (raw.byteLength === 32) return raw
    const text = raw.toString('latin1').trim()
    if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex')
    if (/^[A-Za-z0-9+/]{43}=$/.test(text)) return Buffer.from(text, 'base64')
    throw new Error(`secret_file ${file} must hold 32 bytes: raw, or as 64 hex digits, or as 44 base64 characters (openssl rand -hex 32 makes one)`)
  } finally {
    await fh.close()
  }
}
