/**
 * @module gateways/sftp/hostkey
 * The gateway's Ed25519 host key: made on first start, kept at
 * `<data_dir>/sftp/host_ed25519_key` (mode 0600, OpenSSH format), the same at every
 * start after so clients recognise the server.
 */
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto'
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { utils } from './ssh2.js'

export interface HostKey {
  /** The private key, OpenSSH format. */
  readonly privateKey: string
  /** `SHA256:<base64 without padding>`, as `ssh-keygen -l` and clients print it. */
  readonly fingerprint: string
  readonly path: string
}

export const HOST_KEY_FILE = 'host_ed25519_key'

/**
 * Loads the key, or makes it. A key file others can read is made private again
 * (`fixed` tells, for a warning): the host key is what lets clients tell the gateway
 * from an impostor.
 */
export async function loadOrCreateHostKey(dir: string): Promise<HostKey & { readonly created: boolean; readonly fixed: boolean }> {
  const path = join(dir, HOST_KEY_FILE)
  await mkdir(dir, { recursive: true, mode: 0o700 })
  let created = false
  let fixed = false
  let privateKey: string
  try {
    privateKey = await readFile(path, 'utf8')
    if (((await stat(path)).mode & 0o077) !== 0) {
      await chmod(path, 0o600)
      fixed = true
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    privateKey = newEd25519Key()
    // `wx`: two filegates starting on the same data folder never overwrite each other's key.
    await writeFile(path, privateKey, { mode: 0o600, flag: 'wx' }).catch(async (e: NodeJS.ErrnoException) => {
      if (e.code !== 'EEXIST') throw e
      privateKey = await readFile(path, 'utf8')
    })
    created = true
  }
  const parsed = utils.parseKey(privateKey)
  if (parsed instanceof Error) throw new Error(`${path} is not a usable SSH private key: ${parsed.message}`)
  if (parsed.type !== 'ssh-ed25519') throw new Error(`${path} is a ${parsed.type} key; the SFTP gateway's host key is Ed25519`)
  const fingerprint = `SHA256:${createHash('sha256').update(parsed.getPublicSSH()).digest('base64').replace(/=+$/, '')}`
  return { privateKey, fingerprint, path, created, fixed }
}

/** An SSH `string`: its length (uint32, big-endian), then its bytes. */
function sshString(b: Buffer | string): Buffer {
  const data = typeof b === 'string' ? Buffer.from(b) : b
  const len = Buffer.alloc(4)
  len.writeUInt32BE(data.length)
  return Buffer.concat([len, data])
}

/**
 * A new Ed25519 key in OpenSSH's private key format (unencrypted), made with
 * node:crypto. (ssh2 1.17's own generator drops a public key's leading zero byte,
 * about one key in 200, making a key its parser then refuses.)
 */
function newEd25519Key(): string {
  const jwk = generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' })
  const seed = Buffer.from(jwk.d!, 'base64url')
  const pub = Buffer.from(jwk.x!, 'base64url')
  const publicBlob = Buffer.concat([sshString('ssh-ed25519'), sshString(pub)])
  const check = randomBytes(4)
  let secret = Buffer.concat([check, check, publicBlob, sshString(Buffer.concat([seed, pub])), sshString('')])
  const pad = (8 - (secret.length % 8)) % 8
  secret = Buffer.concat([secret, Buffer.from(Array.from({ length: pad }, (_, i) => i + 1))])
  const body = Buffer.concat([Buffer.from('openssh-key-v1\0'), sshString('none'), sshString('none'), sshString(''), Buffer.from([0, 0, 0, 1]), sshString(publicBlob), sshString(secret)])
  const b64 = body.toString('base64').replace(/.{1,70}/g, '$&\n')
  return `-----BEGIN OPENSSH PRIVATE KEY-----\n${b64}-----END OPENSSH PRIVATE KEY-----\n`
}
