/**
 * Test helpers for filegate's OAuth server (front/oauth/): a filegate whose gateway
 * context is kept (to resolve bearer tokens as the MCP gateway does), PKCE pairs,
 * client registration, and the authorization page driven over plain HTTP (its forms
 * posted as a browser posts them, with its cookie).
 */
import { createHash, randomBytes } from 'node:crypto'
import type { Test } from 'tap'
import { validateConfig } from '../../core/config.js'
import type { Gateway, GatewayContext } from '../../core/gateway.js'
import { startFilegate } from '../../front/app.js'
import { type Logger, silentLogger } from '../../front/log.js'
import { checkAnswers } from './openapi.js'

export interface OAuthServer {
  readonly url: string
  readonly ctx: GatewayContext
  readonly dataDir: string
}

/** filegate on a free port with `overrides`; `ctx` is the gateway context (its `bearer`). */
export async function startOAuthServer(t: Test, overrides: Record<string, unknown> = {}, logger: Logger = silentLogger): Promise<OAuthServer> {
  let ctx: GatewayContext | undefined
  const probe: Gateway = {
    name: 'probe',
    start: async (c) => void (ctx = c),
    stop: async () => {},
  }
  const dataDir = (overrides.data_dir as string | undefined) ?? t.testdir()
  const engine = process.env.FILEGATE_HTTP_ENGINE
  const config = validateConfig({ port: 0, workers: 1, shutdown_grace_seconds: 2, sftp: { port: 'off' }, s3: { port: 'off' }, ...(engine ? { http_engine: engine } : {}), ...overrides, data_dir: dataDir })
  const app = await startFilegate(config, { logger, gateways: [probe] })
  t.teardown(() => app.close(0))
  const url = `http://127.0.0.1:${app.port}`
  checkAnswers(url)
  return { url, ctx: ctx!, dataDir }
}

export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}

export async function registerClient(url: string, metadata: Record<string, unknown>): Promise<Response> {
  return fetch(`${url}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(metadata) })
}

export async function newClient(url: string, redirect = 'http://127.0.0.1/callback'): Promise<string> {
  const res = await registerClient(url, { client_name: 'test client', redirect_uris: [redirect], token_endpoint_auth_method: 'none' })
  if (res.status !== 201) throw new Error(`registration failed: ${res.status} ${await res.text()}`)
  return ((await res.json()) as { client_id: string }).client_id
}

/** One form of a page: its hidden `flow`. */
export function flowOf(html: string, formId: string): string {
  const form = new RegExp(`<form[^>]*id="${formId}"[\\s\\S]*?</form>`).exec(html)
  if (!form) throw new Error(`no form #${formId} on the page: ${html.slice(0, 2000)}`)
  return /name="flow" value="([^"]+)"/.exec(form[0])![1]!
}

export interface PageSession {
  readonly cookie: string
  readonly html: string
  readonly status: number
}

/** GET /authorize with `query`: the page (or the redirect, status 303, `html` = Location). */
export async function openPage(url: string, query: Record<string, string>): Promise<PageSession> {
  const res = await fetch(`${url}/authorize?${new URLSearchParams(query)}`, { redirect: 'manual' })
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0]!
  return { cookie, status: res.status, html: res.status === 303 ? res.headers.get('location')! : await res.text() }
}

/** POST /authorize with the page's cookie; a 303's `html` is its Location. */
export async function postPage(url: string, cookie: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<PageSession> {
  const res = await fetch(`${url}/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, ...headers },
    body: new URLSearchParams(fields).toString(),
  })
  return { cookie, status: res.status, html: res.status === 303 ? res.headers.get('location')! : await res.text() }
}

export interface Authorized {
  readonly code: string
  readonly verifier: string
  readonly redirect: string
}

/**
 * The whole page over HTTP: open, log in (`login`: the form's action and fields),
 * allow. @returns the code from the redirect
 */
export async function authorize(url: string, client_id: string, login: Record<string, string>, opts: { redirect?: string; state?: string; resource?: string } = {}): Promise<Authorized> {
  const { verifier, challenge } = pkce()
  const redirect = opts.redirect ?? 'http://127.0.0.1/callback'
  const page = await openPage(url, { response_type: 'code', client_id, redirect_uri: redirect, code_challenge: challenge, code_challenge_method: 'S256', state: opts.state ?? 'st', resource: opts.resource ?? `${url}/mcp` })
  if (page.status !== 200) throw new Error(`authorize page: ${page.status} ${page.html.slice(0, 500)}`)
  const formId = { connection: 'connection-form', gateway: 'gateway-form', tmp: 'tmp-form' }[login.action!]!
  const consent = await postPage(url, page.cookie, { flow: flowOf(page.html, formId), ...login })
  if (consent.status !== 200 || !consent.html.includes('consent-form')) throw new Error(`login: ${consent.status} ${consent.html.slice(0, 1500)}`)
  const done = await postPage(url, page.cookie, { flow: flowOf(consent.html, 'consent-form'), action: 'allow' })
  if (done.status !== 303) throw new Error(`consent: ${done.status} ${done.html.slice(0, 500)}`)
  const code = new URL(done.html).searchParams.get('code')
  if (!code) throw new Error(`no code in ${done.html}`)
  return { code, verifier, redirect }
}

export async function tokenRequest(url: string, fields: Record<string, string>): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${url}/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() })
  return { status: res.status, json: (await res.json()) as Record<string, unknown> }
}

export function exchange(url: string, client_id: string, a: Authorized, extra: Record<string, string> = {}) {
  return tokenRequest(url, { grant_type: 'authorization_code', code: a.code, code_verifier: a.verifier, redirect_uri: a.redirect, client_id, resource: `${url}/mcp`, ...extra })
}
