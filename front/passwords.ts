/**
 * @module front/passwords
 * Slow password hashes (scrypt, node:crypto) for the admin password, share
 * passwords and gateway users, with a timing-safe check; and the fixed delay
 * that every refused password waits, so a failure takes the same time whatever
 * went wrong; and `checkPassword`, the one way a login checks a password
 * (throttled, delayed, malformed input treated as a wrong password).
 *
 * Format: `scrypt$N$r$p$<salt b64url>$<hash b64url>`: the parameters travel with
 * the hash, so they can be raised later without breaking stored ones.
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto'
import { ApiError } from '../core/api-error.js'
import type { Throttle } from './throttle.js'

const N = 16384
const R = 8
const P = 1
const KEY_BYTES = 32

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, KEY_BYTES, { N: n, r, p, maxmem: 256 * n * r + 1024 * 1024 }, (err, key) => (err ? reject(err) : resolve(key)))
  })
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16)
  const key = await derive(password, salt, N, R, P)
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`
}

/** True when `password` matches `hash`; false for a malformed hash. */
export async function verifyPassword(password: string, hash: string): Promise<boolean> {
  const parts = hash.split('$')
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false
  const [n, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])]
  if (![n, r, p].every((x) => Number.isInteger(x) && x > 0) || n > 1 << 20) return false
  const expected = Buffer.from(parts[5]!, 'base64url')
  if (expected.byteLength !== KEY_BYTES) return false
  const got = await derive(password, Buffer.from(parts[4]!, 'base64url'), n, r, p)
  return timingSafeEqual(got, expected)
}

/** How long a refused password waits before its 401. */
export const FAILURE_DELAY_MS = 300

export const failureDelay = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, FAILURE_DELAY_MS))

/** Longest password a login considers; longer ones are refused like wrong ones. */
export const MAX_PASSWORD_LENGTH = 1024

/**
 * One login attempt: counted by `throttle` for (`scope`, `address`) before the check
 * (429 when used up); a wrong password, and equally anything that is not a password
 * at all (missing, not a string, too long), is counted and waits the same fixed
 * delay before its 401. A success forgets only this scope's failures.
 * @param refused the 401's message
 */
export async function checkPassword(opts: {
  throttle: Throttle
  scope: string
  address: string
  password: unknown
  hash: string
  refused: string
}): Promise<void> {
  const attempt = await opts.throttle.begin(opts.scope, opts.address)
  const { password } = opts
  const wellFormed = typeof password === 'string' && password.length <= MAX_PASSWORD_LENGTH
  let right = false
  try {
    right = wellFormed && (await verifyPassword(password, opts.hash))
  } finally {
    await (right ? attempt.right('forget') : attempt.wrong())
  }
  if (!right) {
    await failureDelay()
    throw new ApiError('NOT_AUTHENTICATED', opts.refused)
  }
}
