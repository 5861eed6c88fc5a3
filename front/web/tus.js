// A tus 1.0 client (docs/resumable-uploads.md) written for this page: create, send in
// chunks with PATCH, ask with HEAD where to go on after a cut. The upload's URL is kept in
// localStorage under the file's identity, so a reload (or another try later) resumes at
// the server's offset instead of starting again. No library: the protocol needs four
// requests, and the page must not depend on files outside this folder.

const CHUNK = 8 * 1024 * 1024
const RETRY_DELAYS = [500, 1000, 2000, 4000, 8000, 15000]
const PREFIX = 'filegate-tus:'

/** Where the URL of an unfinished upload of this file to this path is kept. */
function keyOf(scope, path, file) {
  return PREFIX + JSON.stringify([scope, path, file.size, file.lastModified])
}

/** The unfinished uploads of this credential, for the page to offer resuming them. */
export function pendingUploads(scope) {
  const out = []
  for (let i = 0; i < localStorage.length; i++) {
    const k = localStorage.key(i)
    if (!k?.startsWith(PREFIX)) continue
    try {
      const [s, path, size] = JSON.parse(k.slice(PREFIX.length))
      const v = JSON.parse(localStorage.getItem(k))
      if (s === scope) out.push({ key: k, path, size, offset: v.offset ?? 0 })
    } catch {
      localStorage.removeItem(k)
    }
  }
  return out
}

export function forgetUpload(key) {
  localStorage.removeItem(key)
}

class TusError extends Error {
  constructor(message, status, retry) {
    super(message)
    this.status = status
    this.retry = retry
  }
}

/** One request by XMLHttpRequest: it reports upload progress, which fetch does not. */
function request(method, url, headers, body, onProgress, signal) {
  return new Promise((resolve, reject) => {
    const x = new XMLHttpRequest()
    x.open(method, url)
    for (const [k, v] of Object.entries(headers)) x.setRequestHeader(k, v)
    if (onProgress) x.upload.onprogress = (e) => onProgress(e.loaded)
    x.onload = () => resolve(x)
    x.onerror = () => reject(new TusError('the connection was cut', 0, true))
    x.ontimeout = x.onerror
    x.onabort = () => reject(Object.assign(new Error('cancelled'), { name: 'AbortError' }))
    if (signal) {
      if (signal.aborted) return x.onabort()
      signal.addEventListener('abort', () => x.abort(), { once: true })
    }
    x.send(body ?? null)
  })
}

function words(x) {
  let msg = ''
  try {
    msg = JSON.parse(x.responseText).message ?? ''
  } catch {
    msg = (x.responseText ?? '').trim().slice(0, 200)
  }
  return msg || `the server answered ${x.status}`
}

const sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms)
    signal?.addEventListener('abort', () => (clearTimeout(t), reject(Object.assign(new Error('cancelled'), { name: 'AbortError' }))), { once: true })
  })

/**
 * Uploads `file` to `path` through tus. `api` is the page's client (its credential and
 * query); `scope` names the credential (a share id or "session"). `onProgress(sent, total, note)`.
 * Resolves once the server has stored the file; throws a TusError in words otherwise.
 */
export async function tusUpload({ api, scope, file, path, onProgress, signal }) {
  const key = keyOf(scope, path, file)
  const base = api.headers()
  const tus = { ...base, 'tus-resumable': '1.0.0' }
  let url = null
  let offset = 0
  const stored = localStorage.getItem(key)
  if (stored) {
    try {
      url = JSON.parse(stored).url
    } catch {
      url = null
    }
  }
  const head = async () => {
    const x = await request('HEAD', url, tus, null, null, signal)
    if (x.status === 200) return Number(x.getResponseHeader('upload-offset'))
    if (x.status === 404 || x.status === 410) return null // gone or finished elsewhere: start again
    throw new TusError(words(x), x.status, x.status >= 500)
  }
  if (url) {
    offset = (await head().catch((e) => (e.retry ? 0 : null))) ?? -1
    if (offset < 0) {
      forgetUpload(key)
      url = null
      offset = 0
    } else {
      onProgress?.(offset, file.size, offset > 0 ? 'resumed' : '')
    }
  }
  if (!url) {
    const x = await request('POST', api.url('/api/files/tus', { path }), { ...tus, 'upload-length': String(file.size) }, null, null, signal)
    if (x.status !== 201) throw new TusError(words(x), x.status, false)
    url = x.getResponseHeader('location')
    localStorage.setItem(key, JSON.stringify({ url, offset: 0, name: file.name }))
  }
  let failures = 0
  while (offset < file.size) {
    const end = Math.min(file.size, offset + CHUNK)
    try {
      const x = await request(
        'PATCH',
        url,
        { ...tus, 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' },
        file.slice(offset, end),
        (loaded) => onProgress?.(offset + loaded, file.size, ''),
        signal,
      )
      if (x.status === 204) {
        offset = Number(x.getResponseHeader('upload-offset'))
        failures = 0
        localStorage.setItem(key, JSON.stringify({ url, offset, name: file.name }))
        onProgress?.(offset, file.size, '')
        continue
      }
      if (x.status === 409 || x.status >= 500) throw new TusError(words(x), x.status, true)
      forgetUpload(key)
      throw new TusError(words(x), x.status, false)
    } catch (err) {
      if (err.name === 'AbortError' || !err.retry || failures >= RETRY_DELAYS.length) throw err
      onProgress?.(offset, file.size, 'connection lost, retrying…')
      await sleep(RETRY_DELAYS[failures++], signal)
      // Ask the server how much it kept: a cut PATCH may have delivered part of its chunk.
      const at = await head().catch((e) => {
        if (e.retry) return offset
        throw e
      })
      if (at === null) {
        forgetUpload(key)
        throw new TusError('the upload was lost on the server: start it again', 404, false)
      }
      offset = at
      onProgress?.(offset, file.size, 'resumed')
    }
  }
  forgetUpload(key)
}
