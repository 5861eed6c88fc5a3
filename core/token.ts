/**
 * @module core/token
 * Sealed session tokens (docs/api.md, "Sessions"): AES-256-GCM under the server's
 * secret, over a msgpack payload that carries everything needed to serve the
 * session (so any node holding the secret can serve it: no session table).
 *
 * Format: base64url( version(1) | iv(12) | ciphertext | tag(16) ). The version byte
 * is also authenticated (as additional data), so it cannot be swapped.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { pack, unpack } from 'msgpackr'

const VERSION = 1
const IV_BYTES = 12
const TAG_BYTES = 16
const AAD = Buffer.from('filegate-token')

export class TokenError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'TokenError'
  }
}

/** Encrypts and authenticates `payload` under a 32-byte key. */
export function seal(payload: unknown, key: Uint8Array): string {
  if (key.byteLength !== 32) throw new RangeError('the token key must be 32 bytes')
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  const head = Buffer.from([VERSION])
  cipher.setAAD(Buffer.concat([AAD, head]))
  const body = Buffer.concat([cipher.update(pack(payload)), cipher.final()])
  return Buffer.concat([head, iv, body, cipher.getAuthTag()]).toString('base64url')
}

/** Opens a token sealed by `seal`. @throws TokenError when it is malformed or was not sealed under `key`. */
export function unseal(token: string, key: Uint8Array): unknown {
  if (!/^[A-Za-z0-9_-]{40,8192}$/.test(token)) throw new TokenError('malformed token')
  const raw = Buffer.from(token, 'base64url')
  if (raw[0] !== VERSION) throw new TokenError('unknown token version')
  if (raw.byteLength < 1 + IV_BYTES + TAG_BYTES + 1) throw new TokenError('malformed token')
  const iv = raw.subarray(1, 1 + IV_BYTES)
  const tag = raw.subarray(raw.byteLength - TAG_BYTES)
  const body = raw.subarray(1 + IV_BYTES, raw.byteLength - TAG_BYTES)
  const decipher = createDecipheriv('aes-256-gcm', key, iv)
  decipher.setAAD(Buffer.concat([AAD, raw.subarray(0, 1)]))
  decipher.setAuthTag(tag)
  let plain: Buffer
  try {
    plain = Buffer.concat([decipher.update(body), decipher.final()])
  } catch {
    throw new TokenError('token not issued by this server')
  }
  return unpack(plain)
}
