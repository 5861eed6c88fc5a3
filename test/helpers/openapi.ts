/**
 * @module test/helpers/openapi
 * Real answers checked against the OpenAPI document (docs/openapi.json), so that the
 * document cannot drift from the server: its path and operation, a documented status
 * (exact, or a `4XX`-style range), the documented media type, required headers, and a
 * JSON body against its schema (ajv, JSON Schema 2020-12, the dialect of OpenAPI 3.1).
 *
 * `checkAnswers(url)` makes every `fetch` of this test process to that server checked
 * this way (test/helpers/filegate.ts does it for every test server): an answer the
 * document does not describe fails the request with the reason. Streamed bodies are
 * not read here, so tests of slow readers and big transfers keep their behaviour.
 */
import { readFileSync } from 'node:fs'
import { Ajv2020 } from 'ajv/dist/2020.js'
import type { ValidateFunction } from 'ajv'

export const DOCUMENT_FILE = new URL('../../docs/openapi.json', import.meta.url)

interface Operation {
  readonly responses: Readonly<Record<string, { $ref?: string } & Response>>
}
interface Response {
  readonly headers?: Readonly<Record<string, { $ref?: string; required?: boolean }>>
  readonly content?: Readonly<Record<string, { schema?: unknown }>>
}
export interface Document {
  readonly paths: Readonly<Record<string, Readonly<Record<string, Operation>>>>
  readonly components: { readonly responses: Readonly<Record<string, Response>>; readonly headers: Readonly<Record<string, { required?: boolean }>> }
}

export const document = JSON.parse(readFileSync(DOCUMENT_FILE, 'utf8')) as Document

const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true })
ajv.addSchema(document as object, 'openapi')
const compiled = new Map<string, ValidateFunction>()

const pointer = (parts: readonly string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')
const deref = <T>(x: T & { $ref?: string }, parts: string[]): [T, string[]] => {
  if (!x.$ref) return [x, parts]
  const refParts = x.$ref.replace(/^#\//, '').split('/')
  let v: unknown = document
  for (const p of refParts) v = (v as Record<string, unknown>)[p]
  return [v as T, refParts]
}

/** The documented path template a request path falls under (`/api/share/{id}`), or null. */
export function templateOf(path: string): string | null {
  const p = path.length > 1 ? path.replace(/\/+$/, '') : path
  if (document.paths[p]) return p
  for (const t of Object.keys(document.paths)) {
    const re = new RegExp(`^${t.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`)
    if (re.test(p)) return t
  }
  return null
}

/**
 * Why this answer is not what the document says, or null when it is. `body` is the
 * text of a JSON answer (other bodies are not checked).
 */
export function mismatch(method: string, path: string, status: number, headers: Headers, body: string | null): string | null {
  const template = templateOf(path)
  const where = `${method} ${path} → ${status}`
  if (method === 'HEAD') body = null // a HEAD answer has no body to check
  if (template === null) {
    // An unknown path is refused (404, or 400 for a malformed one) in the error envelope; anything else must be documented.
    if (status !== 404 && status !== 400) return `${where}: the path is not in docs/openapi.json`
    return checkContent(where, headers, body, document.components.responses.Error!, ['components', 'responses', 'Error'])
  }
  const item = document.paths[template]!
  const m = method.toLowerCase()
  const op = item[m] ?? (m === 'head' ? item.get : undefined)
  if (!op) {
    // A method the path does not have: the error envelope (400 naming the allowed methods).
    if (status >= 400 && status < 500) return checkContent(where, headers, body, document.components.responses.Error!, ['components', 'responses', 'Error'])
    return `${where}: ${method} is not documented on ${template}`
  }
  const opKey = item[m] ? m : 'get'
  const key = op.responses[String(status)] ? String(status) : op.responses[`${String(status)[0]}XX`] ? `${String(status)[0]}XX` : op.responses.default ? 'default' : null
  if (key === null) return `${where}: status ${status} is not documented for ${method} ${template}`
  const [response, parts] = deref<Response>(op.responses[key]!, ['paths', template, opKey, 'responses', key])
  for (const [name, h] of Object.entries(response.headers ?? {})) {
    const [header] = deref<{ required?: boolean }>(h, [])
    if (header.required && !headers.has(name)) return `${where}: header ${name} is required by the document`
  }
  if (m === 'head' || status === 204 || status === 304) return null
  return checkContent(where, headers, body, response, parts)
}

function checkContent(where: string, headers: Headers, body: string | null, response: Response, parts: string[]): string | null {
  const content = response.content
  if (!content) return null
  const type = (headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
  const media = Object.keys(content).find((k) => k === type || k === '*/*' || (k.endsWith('/*') && type.startsWith(k.slice(0, -1))))
  if (media === undefined) return `${where}: Content-Type ${type || '(none)'} is not one of ${Object.keys(content).join(', ')}`
  if (media !== 'application/json' || body === null || content[media]!.schema === undefined) return null
  const ref = `openapi#/${pointer([...parts, 'content', media, 'schema'])}`
  let validate = compiled.get(ref)
  if (!validate) {
    validate = ajv.compile({ $ref: ref })
    compiled.set(ref, validate)
  }
  let value: unknown
  try {
    value = JSON.parse(body)
  } catch {
    return `${where}: the body is not JSON: ${body.slice(0, 200)}`
  }
  if (validate(value)) return null
  return `${where}: the body does not match the document: ${ajv.errorsText(validate.errors)}; body: ${body.slice(0, 500)}`
}

const checked = new Set<string>()
let installed = false

/** From now on, every fetch to `origin` (scheme, host and port) is checked against the document. */
export function checkAnswers(origin: string): void {
  checked.add(new URL(origin).origin)
  if (installed) return
  installed = true
  const original = globalThis.fetch
  globalThis.fetch = async (input, init) => {
    const res = await original(input, init)
    const url = new URL(input instanceof Request ? input.url : input)
    if (!checked.has(url.origin)) return res
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase()
    const json = (res.headers.get('content-type') ?? '').startsWith('application/json')
    const body = json ? await res.clone().text() : null
    const wrong = mismatch(method, url.pathname, res.status, res.headers, body)
    if (wrong) throw new Error(`OpenAPI: ${wrong}`)
    return res
  }
}
