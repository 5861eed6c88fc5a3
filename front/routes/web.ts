/**
 * @module front/routes/web
 * The web file manager (docs/web.md): its page at `/` and at `/s/<share id>` (the
 * same page: it reads the path to know whether it opens a share), and its static
 * files under `/web/` (front/web/). The page uses the public HTTP API only; these
 * routes serve files and nothing else, with a strict Content-Security-Policy: only
 * this origin's scripts, styles and fetches, no inline script or style, images and
 * previews from blob: URLs made by the page itself.
 */
import { readFile, readdir } from 'node:fs/promises'
import { ApiError } from '../../core/api-error.js'
import type { HttpReply, HttpRequest } from '../../core/http.js'
import { pageFileReply, refuseWrites } from '../http/page-file.js'

/** What a file under /web/ may be named: no folders, no dot files, nothing to climb with. */
const ASSET_NAME = /^[a-z0-9][a-z0-9-]*\.(?:js|css)$/
/** A share id as front/shares.ts makes them (URL-safe base64); anything else still gets the page, which says the link is unknown. */
const SHARE_PAGE = /^\/s\/[A-Za-z0-9_-]{1,64}$/

export const WEB_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob: data:",
  "connect-src 'self'",
  // A PDF preview is the browser's own viewer in a frame, over a blob: URL the page made.
  'frame-src blob:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

/**
 * The page's files (index.html and those under /web/), read once when this module loads
 * at start-up: serving them reads no file on the main thread. Beside the routes (`npm run
 * build` copies them to dist/front/web/), else in the sources' front/web/.
 */
const files: Promise<Map<string, string>> = (async () => {
  const [dir, list] = await readdir(new URL('../web/', import.meta.url)).then(
    (l) => [new URL('../web/', import.meta.url), l] as const,
    async () => [new URL('../../../front/web/', import.meta.url), await readdir(new URL('../../../front/web/', import.meta.url))] as const,
  )
  const wanted = list.filter((n) => n === 'index.html' || ASSET_NAME.test(n))
  return new Map(await Promise.all(wanted.map(async (n) => [n, await readFile(new URL(n, dir), 'utf8')] as const)))
})()
// A failure is answered to the requests that need the files (not an unhandled rejection at start-up).
files.catch(() => {})

async function read(file: string): Promise<string> {
  const text = (await files).get(file)
  if (text === undefined) throw new ApiError('NOT_FOUND', `no file ${file}`)
  return text
}

/** The files under /web/: a request names one of them or gets 404. */
async function assetNames(): Promise<Set<string>> {
  return new Set([...(await files).keys()].filter((n) => ASSET_NAME.test(n)))
}

/** The route `path` matches, for the request log (a share id is a credential: never logged); null when not the web app's. */
export function webPattern(path: string): string | null {
  if (path === '/') return '/'
  if (SHARE_PAGE.test(path)) return '/s/{id}'
  if (path.startsWith('/web/') && ASSET_NAME.test(path.slice('/web/'.length))) return '/web/{file}'
  return null
}

/** Answers `/`, `/s/<id>` and `/web/<file>`; null when `path` is none of them. */
export function webRoute(req: HttpRequest, path: string): Promise<HttpReply> | null {
  if (path === '/' || SHARE_PAGE.test(path)) return serve(req, 'index.html')
  if (!path.startsWith('/web/')) return null
  return (async () => {
    const file = path.slice('/web/'.length)
    if (!ASSET_NAME.test(file) || !(await assetNames()).has(file)) throw new ApiError('NOT_FOUND', `no endpoint ${req.path}`)
    return serve(req, file)
  })()
}

async function serve(req: HttpRequest, file: string): Promise<HttpReply> {
  refuseWrites(req)
  return pageFileReply(req, file, await read(file), WEB_CSP)
}
