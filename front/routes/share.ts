/**
 * @module front/routes/share
 * POST /api/share, GET /api/share?path=, DELETE /api/share/<id> (docs/api.md,
 * "Shares"): logins with can_share only (token sessions); a share or API key cannot
 * make shares (front/shares.ts refuses them).
 */
import { ApiError } from '../../core/api-error.js'
import type { HttpReply, HttpRequest } from '../../core/http.js'
import type { Access } from '../access.js'
import { readJson } from '../http/body.js'
import { okReply } from '../http/status.js'
import type { ShareService } from '../shares.js'
import { decodeSegment } from './admin.js'

export async function shareRoute(shares: ShareService, req: HttpRequest, id: string | null, access: Access): Promise<HttpReply> {
  const m = req.method
  if (id !== null) {
    if (m !== 'DELETE') throw new ApiError('INVALID_INPUT', `${m} is not supported on ${req.path}; use DELETE`)
    await shares.remove(access, decodeSegment(id))
    return okReply()
  }
  if (m === 'POST') return okReply({ result: await shares.create(access.session, access.view, await readJson(req), req.requestId, req.signal) })
  if (m === 'GET') return okReply({ results: await shares.list(access, req.query.get('path')) })
  throw new ApiError('INVALID_INPUT', `${m} is not supported on ${req.path}; use GET or POST`)
}
