/**
 * @module front/oauth/form
 * The request shapes of OAuth endpoints: `application/x-www-form-urlencoded` bodies
 * (each parameter at most once, RFC 6749 §3.1), and cookies.
 */
import type { HttpRequest } from '../../core/http.js'

export class FormError extends Error {}

const LIMIT = 64 * 1024

/** The body's parameters. @throws FormError when it is not a form, too large, or repeats a parameter */
export async function readForm(req: HttpRequest): Promise<Map<string, string>> {
  const type = (req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
  if (type !== 'application/x-www-form-urlencoded') throw new FormError('the body must be application/x-www-form-urlencoded')
  const parts: Uint8Array[] = []
  let total = 0
  for await (const chunk of req.body) {
    total += chunk.byteLength
    if (total > LIMIT) throw new FormError(`the body is over ${LIMIT} bytes`)
    parts.push(chunk)
  }
  return params(new URLSearchParams(Buffer.concat(parts).toString('utf8')))
}

/** Parameters as a map. @throws FormError when one is repeated */
export function params(p: URLSearchParams): Map<string, string> {
  const out = new Map<string, string>()
  for (const [k, v] of p) {
    if (out.has(k)) throw new FormError(`the parameter "${k}" is repeated`)
    out.set(k, v)
  }
  return out
}

export function cookie(req: HttpRequest, name: string): string | undefined {
  for (const part of (req.header('cookie') ?? '').split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return undefined
}
