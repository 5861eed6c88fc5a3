// The HTTP API as the page uses it (docs/api.md): one credential per client (a session
// token, or a share id with its password), and every failure turned into a sentence.

/** A failed call: `message` is for people, `code` and `status` for the page's own choices. */
export class ApiFailure extends Error {
  constructor(message, code, status) {
    super(message)
    this.code = code
    this.status = status
  }
}

const HINTS = {
  NOT_AUTHENTICATED: 'You are not logged in, or your session has ended.',
  FORBIDDEN: 'You may not do that here.',
  NOT_FOUND: 'It is not there (any more).',
  CONFLICT: 'Something with that name is already there.',
  GONE: 'This link has expired.',
  TOO_LARGE: 'That is larger than this server accepts.',
  RATE_LIMITED: 'Too many attempts: wait a few minutes, then try again.',
  BACKEND_UNREACHABLE: 'The storage could not be reached.',
  BACKEND_TIMEOUT: 'The storage did not answer in time.',
  UNAVAILABLE: 'The server is busy: try again in a moment.',
  INSUFFICIENT_STORAGE: 'The storage is full.',
  INTERNAL: 'Something went wrong on the server.',
}

/** The words for an error answer: the server's own sentence (meant for people), else a hint for its code. */
export async function failureOf(res) {
  let code = 'HTTP_' + res.status
  let message = ''
  const text = await res.text().catch(() => '')
  try {
    const j = JSON.parse(text)
    if (j && typeof j === 'object') {
      code = typeof j.code === 'string' ? j.code : code
      message = typeof j.message === 'string' ? j.message : ''
    }
  } catch {
    // tus's bookkeeping answers are short texts, not JSON.
    message = text.length < 200 ? text.trim() : ''
  }
  const hint = HINTS[code] ?? `The server answered ${res.status}.`
  const sentence = message ? `${message.charAt(0).toUpperCase()}${message.slice(1)}` : ''
  const words = sentence && !sentence.endsWith('.') ? `${sentence}.` : sentence
  return new ApiFailure(words ? (code === 'INTERNAL' ? hint : words) : hint, code, res.status)
}

export const OFFLINE = 'The server could not be reached: check the connection, then try again.'

/**
 * A client of the API for one credential: `{ token }` or `{ share, password }`.
 * `url()` is for links the browser follows by itself (only a share without a password can).
 */
export function client(cred) {
  const headers = () => {
    const h = {}
    if (cred.token) h.authorization = `Bearer ${cred.token}`
    if (cred.password) h['x-share-password'] = cred.password
    return h
  }
  const url = (endpoint, query = {}) => {
    const qs = new URLSearchParams()
    for (const [k, v] of Object.entries(query)) for (const x of Array.isArray(v) ? v : [v]) if (x !== undefined && x !== null) qs.append(k, String(x))
    if (cred.share) qs.set('share', cred.share)
    const s = qs.toString()
    return `${endpoint}${s ? `?${s}` : ''}`
  }
  const call = async (method, endpoint, query, init = {}) => {
    let res
    try {
      res = await fetch(url(endpoint, query), { ...init, method, headers: { ...headers(), ...(init.headers ?? {}) } })
    } catch (err) {
      if (err?.name === 'AbortError') throw err
      throw new ApiFailure(OFFLINE, 'OFFLINE', 0)
    }
    if (!res.ok) throw await failureOf(res)
    return res
  }
  return {
    cred,
    headers,
    url,
    call,
    async json(method, endpoint, query, init) {
      return (await call(method, endpoint, query, init)).json()
    },
    ls: (path) => call('GET', '/api/files/ls', { path }).then((r) => r.json()),
    // The answers are read to the end: a body left unread is cut when the page navigates.
    mkdir: (path) => call('POST', '/api/files/mkdir', { path }).then((r) => r.json()),
    touch: (path) => call('POST', '/api/files/touch', { path }).then((r) => r.json()),
    rm: (path) => call('POST', '/api/files/rm', { path }).then((r) => r.json()),
    mv: (from, to) => call('POST', '/api/files/mv', { from, to }).then((r) => r.json()),
  }
}

/** POST /api/session: the token, or an ApiFailure in words. */
export async function login(body) {
  let res
  try {
    res = await fetch('/api/session', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  } catch {
    throw new ApiFailure(OFFLINE, 'OFFLINE', 0)
  }
  if (!res.ok) throw await failureOf(res)
  return (await res.json()).result
}

/** Joins a folder and a name into an API path. */
export function join(dir, name) {
  return `${dir.endsWith('/') ? dir : `${dir}/`}${name}`
}

/** The folder a path is in (`/a/b` → `/a/`). */
export function parentOf(path) {
  const p = path.replace(/\/+$/, '')
  return p.slice(0, p.lastIndexOf('/') + 1) || '/'
}

export function baseName(path) {
  return path.replace(/\/+$/, '').split('/').pop() ?? ''
}
