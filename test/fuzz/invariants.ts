/**
 * The invariants checked after every fuzzed case, whatever the door:
 * - nothing outside the root read: no answer carries a canary (the random contents of
 *   the sentinel files outside the root, also base64-encoded) nor the server-side
 *   path of the world;
 * - nothing outside the root changed: the outside folder (names, types, sizes, mtimes,
 *   contents) and the world's top folder are as they were;
 * - every error in its protocol's shape (checked by each door: `httpProblem`,
 *   `s3Problem`, `sftpProblem`, and the MCP door's own), no 5xx but 503;
 * - no crash: `alive` after each batch.
 */
import { readdirSync, readFileSync, lstatSync } from 'node:fs'
import { join } from 'node:path'
import { document, mismatch, templateOf } from '../helpers/openapi.js'
import type { World } from './world.js'

/** A failed invariant: the property fails with this message (fast-check prints the case). */
export class Broken extends Error {}

export function expect(ok: unknown, what: string): asserts ok {
  if (!ok) throw new Broken(short(what))
}

/** Long values (a 64 KiB name) cut in messages. */
export function short(s: string): string {
  return s.replace(/(.)\1{60,}/g, (run, c: string) => `${c.repeat(20)}…(${run.length}×)`).replace(/[^\n]{600,}/g, (l) => `${l.slice(0, 600)}…`)
}

/** Names, types, sizes, mtimes and contents under `dir`, one line each. */
function walk(dir: string, rel = ''): string[] {
  const out: string[] = []
  for (const name of readdirSync(dir).sort()) {
    const abs = join(dir, name)
    const st = lstatSync(abs)
    const kind = st.isSymbolicLink() ? 'l' : st.isDirectory() ? 'd' : 'f'
    out.push(`${kind} ${rel}${name} ${st.size} ${st.mtimeMs} ${st.mode}${kind === 'f' ? ` ${readFileSync(abs, 'hex')}` : ''}`)
    if (kind === 'd') out.push(...walk(abs, `${rel}${name}/`))
  }
  return out
}

/** The state outside the roots: the outside folder in full and the names in the world's top folder. */
export function outsideState(w: World): string {
  return [...walk(w.outside), '--', ...readdirSync(w.top).sort()].join('\n')
}

/** Why the outside changed (the first differing line), or null. */
export function outsideChanged(w: World, before: string): string | null {
  const now = outsideState(w)
  if (now === before) return null
  const a = before.split('\n')
  const b = now.split('\n')
  const i = a.findIndex((l, j) => l !== b[j])
  return `outside the root changed: was ${JSON.stringify(a[i] ?? '(nothing)')}, now ${JSON.stringify(b[i === -1 ? a.length : i] ?? '(nothing)')}`
}

const BASE64ISH = /[A-Za-z0-9+/_-]{40,}={0,2}/g

/** Why an answer leaks what is outside the root (a canary, the server's own path), or null. */
export function leak(w: World, answer: string | Uint8Array): string | null {
  const text = typeof answer === 'string' ? answer : Buffer.from(answer).toString('latin1')
  if (text.includes(w.canary)) return 'an answer carries the contents or name of a file outside the root'
  if (text.includes(w.top)) return `an answer names the server-side path ${w.top}`
  for (const m of text.match(BASE64ISH) ?? []) {
    const decoded = Buffer.from(m, m.includes('-') || m.includes('_') ? 'base64url' : 'base64').toString('latin1')
    if (decoded.includes(w.canary)) return 'an answer carries (base64) the contents of a file outside the root'
  }
  return null
}

/** Why an HTTP answer breaks the API's rules (a 5xx but 503, not as docs/openapi.json says), or null. */
export function httpProblem(method: string, path: string, status: number, headers: Headers, body: string | null): string | null {
  // "Every path also answers a CORS preflight" (docs/api.md), known or not.
  if (method === 'OPTIONS' && status === 204) return null
  // HEAD where only GET is documented: "a method the endpoint does not have answers 400" (docs/api.md), a HEAD answer without a body.
  if (method === 'HEAD' && status === 400 && headers.has('x-request-id')) {
    const template = templateOf(path)
    if (template === null || !document.paths[template]?.head) return null
  }
  // 501 NOT_SUPPORTED is HTTP's answer to a method or transfer coding the server does not implement (front/http/exchange.ts), in the envelope.
  if (status === 501 && body !== null && /^\{"status":"error","code":"NOT_SUPPORTED","message":"[^"]+/.test(body) && headers.has('x-request-id')) return null
  if (status >= 500 && status !== 503) return `${method} ${path} → ${status}: a server error (${(body ?? '').slice(0, 300)})`
  return mismatch(method, path, status, headers, body)
}

/** Why an S3 answer is not S3's: a 5xx but 503 (and 501 NotImplemented), an error without its XML `<Error>` with Code and RequestId. */
export function s3Problem(method: string, status: number, headers: Headers, body: string): string | null {
  if (status >= 500 && status !== 503 && status !== 501) return `S3 ${method} → ${status}: a server error (${body.slice(0, 300)})`
  if (status < 300 || status === 304) return null
  if (!headers.get('x-amz-request-id')) return `S3 ${method} → ${status} without x-amz-request-id`
  if (method === 'HEAD') return body === '' ? null : `S3 HEAD → ${status} with a body`
  if (!/^<\?xml[^>]*\?>\s*<Error>[\s\S]*<Code>[A-Za-z]+<\/Code>[\s\S]*<RequestId>[^<]+<\/RequestId>[\s\S]*<\/Error>\s*$/.test(body)) return `S3 ${method} → ${status}: not an S3 <Error> document: ${body.slice(0, 300)}`
  if (status === 501 && !body.includes('<Code>NotImplemented</Code>')) return `S3 ${method} → 501 but not NotImplemented: ${body.slice(0, 300)}`
  return null
}

/** SFTP v3 status codes a request may fail with (not "no connection"/"connection lost": those mean the session died). */
const SFTP_FAILURES = new Set([1, 2, 3, 4, 5, 8])

/** Why an SFTP failure is not an SFTP status with a message, or null. */
export function sftpProblem(err: unknown): string | null {
  const e = err as { code?: unknown; message?: unknown }
  if (typeof e.code !== 'number') return `not an SFTP status: ${String(err)}`
  if (!SFTP_FAILURES.has(e.code)) return `SFTP status ${e.code} (${String(e.message)})`
  if (typeof e.message !== 'string' || e.message === '') return `SFTP status ${e.code} without a message`
  return null
}

/** The service is alive: health answers, a new session can be made, and the world's token still lists the root. */
export async function alive(w: World): Promise<void> {
  for (const [what, url, init] of [
    ['/healthz', `${w.url}/healthz`, {}],
    ['a new session', `${w.url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'tmp', userID: 'alive' }) }],
    ['listing the root', `${w.url}/api/files/ls?path=/`, { headers: { authorization: `Bearer ${w.token}` } }],
  ] as const) {
    const res = await fetch(url, init)
    const text = await res.text()
    expect(res.status === 200, `${what}: ${res.status} ${text.slice(0, 300)}`)
  }
}

/** A failed run, short enough to read: the broken invariant, the seed and path to replay it, the case (long values cut). */
export function report(d: { failed: boolean; error?: unknown; errorInstance?: unknown; counterexample: unknown; seed: number; counterexamplePath: string | null; numRuns: number }): string {
  const err = d.errorInstance instanceof Error ? d.errorInstance.message : String(d.errorInstance ?? d.error)
  const shown = JSON.stringify(d.counterexample, (_k, v: unknown) => (typeof v === 'string' && v.length > 200 ? `${v.slice(0, 200)}…(${v.length} chars)` : v instanceof Uint8Array ? `bytes(${v.length})` : v))
  return `${err.slice(0, 2000)}\n  after ${d.numRuns} cases; seed ${d.seed}, path ${JSON.stringify(d.counterexamplePath)}\n  case: ${(shown ?? '').slice(0, 3000)}`
}
