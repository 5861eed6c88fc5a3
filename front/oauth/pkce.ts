/**
 * @module front/oauth/pkce
 * PKCE (RFC 7636), S256 only: `plain` would hand the verifier to whoever sees the
 * authorization request.
 */
import { createHash, timingSafeEqual } from 'node:crypto'

/** 43 to 128 unreserved characters (RFC 7636 §4.1). */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/
/** base64url of a sha256: 43 characters. */
export const CHALLENGE = /^[A-Za-z0-9_-]{43}$/

export function verifierMatches(verifier: string, challenge: string): boolean {
  if (!VERIFIER.test(verifier)) return false
  const got = Buffer.from(createHash('sha256').update(verifier).digest('base64url'))
  const want = Buffer.from(challenge)
  return got.byteLength === want.byteLength && timingSafeEqual(got, want)
}
