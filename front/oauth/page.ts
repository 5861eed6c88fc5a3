/**
 * @module front/oauth/page
 * The authorization page's HTML (docs/mcp-auth.md, "The login page"): plain forms, no
 * script at all, one style sheet inline (allowed by its hash in the CSP), nothing
 * fetched from elsewhere. Everything a client supplied (its name, the messages that
 * quote input) is escaped. Served with a strict CSP, `X-Frame-Options: DENY` and
 * `no-store`; forms may post only here, and the consent form's answer may redirect
 * only to the client's redirect URI.
 */
import { createHash } from 'node:crypto'
import type { HttpReply } from '../../core/http.js'

const STYLE = `body{font:15px/1.45 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1d2330}
main{max-width:30rem;margin:3rem auto;padding:1.5rem 2rem;background:#fff;border-radius:8px;box-shadow:0 1px 4px #0002}
h1{font-size:1.3rem;margin:0 0 .5rem}h2{font-size:1.05rem;margin:1.4rem 0 .4rem}
label{display:block;margin:.5rem 0 .15rem;font-weight:600}input,select{width:100%;box-sizing:border-box;padding:.45rem;font:inherit}
button{margin-top:.8rem;padding:.5rem 1.1rem;font:inherit;cursor:pointer}
.error{background:#fde8e8;color:#8a1c1c;padding:.6rem .8rem;border-radius:4px}
.muted{color:#5b6475;font-size:.9rem}fieldset{border:1px solid #d6d9e0;border-radius:6px;margin:1rem 0;padding:.4rem 1rem 1rem}
legend{font-weight:700;padding:0 .3rem}code{background:#eef0f4;padding:0 .25rem;border-radius:3px}`
const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64')

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

/** The CSP's form-action source for a redirect URI: its origin, or a private-use scheme. */
function redirectSource(uri: string): string {
  const u = new URL(uri)
  return u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : u.protocol
}

function reply(status: number, title: string, body: string, opts: { redirect?: string; cookie?: string } = {}): HttpReply {
  const formAction = ["'self'", ...(opts.redirect ? [redirectSource(opts.redirect)] : [])].join(' ')
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="same-origin"><title>${escapeHtml(title)} – filegate</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`
  return {
    status,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'x-frame-options': 'DENY',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'same-origin', // no-referrer would make the browser send "Origin: null" with the forms
      'content-security-policy': `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
      ...(opts.cookie ? { 'set-cookie': opts.cookie } : {}),
    },
    body: html,
  }
}

/** An error before a trusted redirect URI is known: shown here, never redirected. */
export function errorPage(status: number, message: string): HttpReply {
  return reply(status, 'Authorization failed', `<h1>Authorization failed</h1><p class="error" id="error">${escapeHtml(message)}</p><p class="muted">Go back to the application and start again.</p>`)
}

export interface LoginChoices {
  /** Configured connections: label and type. */
  readonly connections: readonly { readonly label: string; readonly type: string }[]
  readonly tmp: boolean
}

interface Common {
  readonly clientName: string
  readonly redirectUri: string
  /** The sealed flow state the next POST carries. */
  readonly flow: string
  readonly cookie?: string
}

const who = (c: Common) =>
  `<p><strong id="client-name">${escapeHtml(c.clientName)}</strong> wants to use your files through filegate's MCP server. It will be sent back to <code id="redirect-host">${escapeHtml(redirectHost(c.redirectUri))}</code>.</p>`

function redirectHost(uri: string): string {
  const u = new URL(uri)
  return u.protocol === 'http:' || u.protocol === 'https:' ? u.host : `${u.protocol}${u.host || u.pathname.split('/')[0] || ''}`
}

const hidden = (flow: string, action: string) => `<input type="hidden" name="flow" value="${escapeHtml(flow)}"><input type="hidden" name="action" value="${action}">`

export function loginPage(c: Common & { readonly choices: LoginChoices; readonly error?: string; readonly status?: number }): HttpReply {
  const parts = [`<h1>Log in to filegate</h1>`, who(c)]
  if (c.error) parts.push(`<p class="error" id="error">${escapeHtml(c.error)}</p>`)
  if (c.choices.connections.length > 0) {
    const options = c.choices.connections.map((x) => `<option value="${escapeHtml(x.label)}">${escapeHtml(x.label)} (${escapeHtml(x.type)})</option>`).join('')
    parts.push(`<form method="post" action="/authorize" id="connection-form"><fieldset><legend>Storage connection</legend>${hidden(c.flow, 'connection')}
<label for="connection">Connection</label><select id="connection" name="label">${options}</select>
<label for="conn-username">User name <span class="muted">(access key id for S3; none for a local folder)</span></label><input id="conn-username" name="username" autocomplete="username">
<label for="conn-password">Password <span class="muted">(secret key for S3)</span></label><input id="conn-password" name="password" type="password" autocomplete="current-password">
<button type="submit">Log in</button></fieldset></form>`)
  }
  parts.push(`<form method="post" action="/authorize" id="gateway-form"><fieldset><legend>Gateway user</legend>${hidden(c.flow, 'gateway')}
<label for="gw-user">User name</label><input id="gw-user" name="user" autocomplete="username" required>
<label for="gw-password">Password</label><input id="gw-password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Log in</button></fieldset></form>`)
  if (c.choices.tmp) {
    parts.push(`<form method="post" action="/authorize" id="tmp-form"><fieldset><legend>Scratch space (tmp user)</legend>${hidden(c.flow, 'tmp')}
<label for="tmp-user">User id</label><input id="tmp-user" name="userID" required pattern="[A-Za-z0-9_\\-]{1,64}">
<button type="submit">Continue</button></fieldset></form>`)
  }
  return reply(c.status ?? 200, 'Log in', parts.join('\n'), { ...(c.cookie ? { cookie: c.cookie } : {}) })
}

export function consentPage(c: Common & { readonly account: string }): HttpReply {
  return reply(
    200,
    'Allow access',
    `<h1>Allow access?</h1>${who(c)}<p>Logged in as <strong id="account">${escapeHtml(c.account)}</strong>. The application may read, change and share these files until you revoke it or the login ends.</p>
<form method="post" action="/authorize" id="consent-form">${hidden(c.flow, 'allow')}<button type="submit" id="allow">Allow</button></form>
<form method="post" action="/authorize" id="deny-form">${hidden(c.flow, 'deny')}<button type="submit" id="deny">Deny</button></form>`,
    { redirect: c.redirectUri },
  )
}
