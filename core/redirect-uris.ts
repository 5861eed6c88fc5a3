/**
 * @module core/redirect-uris
 * OAuth redirect URIs (docs/mcp-auth.md, "Clients"): which may be registered, and
 * which one an authorization request may name. Allowed: `https` anywhere, `http` on
 * a loopback host only (127.0.0.1, [::1], localhost: a native app's local listener,
 * RFC 8252 §7.3), and a native app's private-use scheme (`com.example.app:/cb`,
 * RFC 8252 §7.1), never one a browser would run or open itself (`javascript:`,
 * `data:`, `file:`...). No fragment. A loopback URI matches on any port (the app
 * picks a free one at each login); everything else matches exactly.
 */

const MAX_LENGTH = 2000
/** Schemes a browser acts on itself: never a redirect target. */
const FORBIDDEN_SCHEMES = new Set(['javascript:', 'data:', 'vbscript:', 'file:', 'about:', 'blob:', 'filesystem:', 'ws:', 'wss:', 'ftp:', 'view-source:', 'chrome:', 'mailto:'])
const LOOPBACK = new Set(['127.0.0.1', '[::1]', 'localhost'])

/** Why `uri` cannot be registered as a redirect URI, or null when it can. */
export function redirectUriProblem(uri: unknown): string | null {
  if (typeof uri !== 'string' || uri === '') return 'a redirect URI must be a non-empty string'
  if (uri.length > MAX_LENGTH) return `a redirect URI must be at most ${MAX_LENGTH} characters`
  let u: URL
  try {
    u = new URL(uri)
  } catch {
    return `${JSON.stringify(uri)} is not an absolute URI`
  }
  if (u.hash !== '' || uri.includes('#')) return `${JSON.stringify(uri)} has a fragment, which a redirect URI must not have`
  if (u.username !== '' || u.password !== '') return `${JSON.stringify(uri)} carries credentials`
  if (u.protocol === 'https:') return u.hostname === '' ? `${JSON.stringify(uri)} has no host` : null
  if (u.protocol === 'http:') return isLoopback(u) ? null : `${JSON.stringify(uri)}: http is allowed on a loopback host only (127.0.0.1, [::1], localhost); use https`
  if (FORBIDDEN_SCHEMES.has(u.protocol)) return `${JSON.stringify(uri)}: the scheme ${u.protocol} cannot be a redirect URI`
  return null // a private-use scheme
}

const isLoopback = (u: URL) => u.protocol === 'http:' && LOOPBACK.has(u.hostname)

/**
 * The registered URI `requested` matches, or null: the same string, or for a loopback
 * URI the same but for the port.
 */
export function matchRedirectUri(registered: readonly string[], requested: string): string | null {
  if (registered.includes(requested)) return requested
  let want: URL
  try {
    want = new URL(requested)
  } catch {
    return null
  }
  if (!isLoopback(want) || requested.includes('#') || want.username !== '' || want.password !== '') return null
  for (const r of registered) {
    const have = new URL(r)
    if (isLoopback(have) && have.hostname === want.hostname && have.pathname === want.pathname && have.search === want.search) return requested
  }
  return null
}
