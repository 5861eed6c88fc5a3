/**
 * @module front/routes/openapi
 * GET /api/openapi.json: the OpenAPI 3.1 document of the HTTP API, docs/openapi.json,
 * served as it is kept in the repository (no credential needed). The HTTP tests check
 * every answer they get against it (test/helpers/openapi.ts).
 */
import { readFile } from 'node:fs/promises'
import type { HttpReply } from '../../core/http.js'
import { JSON_TYPE } from '../http/status.js'

/** docs/ next to the sources, from front/routes/ or from the build's dist/front/routes/. */
const load = () =>
  readFile(new URL('../../docs/openapi.json', import.meta.url), 'utf8').catch(() => readFile(new URL('../../../docs/openapi.json', import.meta.url), 'utf8'))

/** Read when this module loads at start-up (serving reads no file on the main thread); a failed read is tried again by the next request. */
let text: Promise<string> = load()
text.catch(() => {})

export async function openapiDocument(): Promise<HttpReply> {
  const body = await text.catch((err: unknown) => {
    text = load()
    text.catch(() => {})
    throw err
  })
  return { status: 200, headers: { 'content-type': JSON_TYPE, 'cache-control': 'no-cache' }, body }
}
