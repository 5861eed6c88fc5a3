/**
 * @module front/ssh-keys
 * Gateway users' authorized public keys: one `authorized_keys` line (`ssh-ed25519
 * AAAA... comment`), parsed with ssh2's key parser, checked (ed25519, ECDSA, or RSA of
 * at least 2048 bits; no DSA, no certificates, never a private key) and reduced to
 * what the state store keeps: the key in SSH wire format, its SHA-256 fingerprint as
 * `ssh-keygen -l` prints it, and its comment.
 */
import { createHash, createPublicKey } from 'node:crypto'
import ssh2 from 'ssh2'
import { ApiError } from '../core/api-error.js'
import { CONTROL } from '../core/paths.js'
import type { AuthorizedKeyRecord } from '../core/state.js'

const ALLOWED_TYPES = new Set(['ssh-ed25519', 'ecdsa-sha2-nistp256', 'ecdsa-sha2-nistp384', 'ecdsa-sha2-nistp521', 'ssh-rsa'])
export const MIN_RSA_BITS = 2048
/** Longest authorized_keys line accepted (an RSA 16384-bit key is about 2.8 KB). */
const MAX_LINE = 8192
const MAX_COMMENT = 200

/** `SHA256:<base64 without padding>` of a key in wire format. */
export function keyFingerprint(blob: Uint8Array): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`
}

/**
 * One authorized_keys line → the record to store (`created` now).
 * @param what the field's name, for the error message
 * @throws ApiError INVALID_INPUT saying what is wrong with it
 */
export function parseAuthorizedKey(line: unknown, what: string): AuthorizedKeyRecord {
  const bad = (why: string) => new ApiError('INVALID_INPUT', `${what}: ${why}`)
  if (typeof line !== 'string' || line.trim() === '') throw bad('must be a public key line, e.g. "ssh-ed25519 AAAA... me@laptop" (the contents of a .pub file)')
  if (line.length > MAX_LINE) throw bad(`longer than ${MAX_LINE} characters`)
  const text = line.trim()
  if (/PRIVATE KEY/.test(text)) throw bad('this is a private key: give the public key (the .pub file), and keep the private one secret')
  if (/[\r\n]/.test(text)) throw bad('one key per line: add several keys one by one')
  const parsed = ssh2.utils.parseKey(text)
  if (parsed instanceof Error) throw bad(`not an SSH public key (${parsed.message}): give one line of the form "ssh-ed25519 AAAA... comment"`)
  const key = Array.isArray(parsed) ? parsed[0] : parsed
  if (key === undefined) throw bad('not an SSH public key')
  if (key.isPrivateKey()) throw bad('this is a private key: give the public key (the .pub file), and keep the private one secret')
  if (key.type === 'ssh-dss') throw bad('DSA keys are refused (broken since OpenSSH 7.0): use an ed25519 key (ssh-keygen -t ed25519)')
  if (!ALLOWED_TYPES.has(key.type)) throw bad(`keys of type ${key.type} are not accepted: use ssh-ed25519, ecdsa-sha2-nistp256/384/521 or ssh-rsa`)
  if (key.type === 'ssh-rsa') {
    const bits = createPublicKey(key.getPublicPEM()).asymmetricKeyDetails?.modulusLength ?? 0
    if (bits < MIN_RSA_BITS) throw bad(`this RSA key has ${bits} bits: at least ${MIN_RSA_BITS} are needed (or use ssh-keygen -t ed25519)`)
  }
  const comment = key.comment.trim()
  if (comment.length > MAX_COMMENT) throw bad(`the comment is longer than ${MAX_COMMENT} characters`)
  if (CONTROL.test(comment)) throw bad('the comment contains a control character')
  const blob = key.getPublicSSH()
  return { fingerprint: keyFingerprint(blob), type: key.type, blob: blob.toString('base64'), comment, created: Date.now() }
}
