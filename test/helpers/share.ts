/**
 * Helpers for share-link, API-key and admin tests: create shares through the API,
 * log in as the admin, make keys, and check error envelopes.
 */
import type { Test } from 'tap'
import { api } from './filegate.js'

export interface ShareAnswer {
  id: string
  path: string
  type: string
  can_read: boolean
  can_upload: boolean
  can_write: boolean
  expire: number | null
  has_password: boolean
  created: number
}

export async function createShare(url: string, token: string, body: Record<string, unknown>): Promise<ShareAnswer> {
  const res = await api(url, token)('POST', '/api/share', {}, { body: JSON.stringify(body) })
  const json = (await res.json()) as { status: string; result: ShareAnswer }
  if (res.status !== 200) throw new Error(`share failed (${res.status}): ${JSON.stringify(json)}`)
  return json.result
}

/** A file endpoint through `?share=` (and `?key=`). */
export function viaShare(url: string, share: string, key?: string) {
  return (method: string, path: string, query: Record<string, string> = {}, init: RequestInit = {}) => {
    const qs = new URLSearchParams({ ...query, share, ...(key === undefined ? {} : { key }) })
    return fetch(`${url}${path}?${qs}`, { ...init, method })
  }
}

export async function expectError(t: Test, res: Response, status: number, code: string, what: string): Promise<void> {
  const body = (await res.json()) as Record<string, unknown>
  t.equal(res.status, status, `${what}: HTTP ${status}`)
  t.equal(body.status, 'error', `${what}: an error envelope`)
  t.equal(body.code, code, `${what}: code ${code} (${String(body.message)})`)
}

export const ADMIN_PASSWORD = 'correct horse battery staple'

export async function adminToken(url: string, password = ADMIN_PASSWORD): Promise<string> {
  const res = await fetch(`${url}/admin/api/session`, { method: 'POST', body: JSON.stringify({ password }) })
  const json = (await res.json()) as { result: { authorization: string } }
  if (res.status !== 200) throw new Error(`admin login failed (${res.status}): ${JSON.stringify(json)}`)
  return json.result.authorization
}

export async function createKey(url: string, admin: string, name: string, origins: string[] = []): Promise<{ id: string; key: string }> {
  const res = await api(url, admin)('POST', '/admin/api/keys', {}, { body: JSON.stringify({ name, origins }) })
  const json = (await res.json()) as { result: { id: string; key: string } }
  if (res.status !== 200) throw new Error(`key failed (${res.status}): ${JSON.stringify(json)}`)
  return json.result
}
