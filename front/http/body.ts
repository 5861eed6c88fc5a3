/**
 * @module front/http/body
 * Small request bodies (JSON documents) read whole, with a cap.
 */
import { ApiError } from '../../core/api-error.js'
import type { HttpRequest } from '../../core/http.js'

export async function readJson(req: HttpRequest, limit = 64 * 1024): Promise<unknown> {
  const parts: Uint8Array[] = []
  let total = 0
  for await (const chunk of req.body) {
    total += chunk.byteLength
    if (total > limit) throw new ApiError('TOO_LARGE', `the JSON body is over ${limit} bytes`)
    parts.push(chunk)
  }
  if (total === 0) throw new ApiError('INVALID_INPUT', 'missing JSON body')
  try {
    return JSON.parse(Buffer.concat(parts).toString('utf8'))
  } catch {
    throw new ApiError('INVALID_INPUT', 'the body is not valid JSON')
  }
}
