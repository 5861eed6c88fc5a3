/**
 * A real filegate (admin API on) started with a gateway that only keeps the
 * GatewayContext it is given: tests call its logins as a gateway would
 * (front/gateway-login.ts), make users through the admin API and read the logs.
 */
import { join } from 'node:path'
import type { Test } from 'tap'
import { validateConfig } from '../../core/config.js'
import type { GatewayContext, LoginRequest, LoginResult } from '../../core/gateway.js'
import { startFilegate } from '../../front/app.js'
import type { Level } from '../../front/log.js'
import { api } from './filegate.js'
import { checkAnswers } from './openapi.js'
import { ADMIN_PASSWORD, adminToken } from './share.js'

export interface Line {
  level: Level
  msg: string
  fields: Record<string, unknown>
}

export interface Gate {
  readonly ctx: GatewayContext
  readonly url: string
  readonly dataDir: string
  /** A folder of the test's, for local connections (made from `disk`). */
  readonly disk: string
  readonly logs: Line[]
  /** Adds a gateway user through the admin API. */
  addUser(body: Record<string, unknown>): Promise<void>
  login(req: Partial<LoginRequest>): Promise<LoginResult>
}

/**
 * filegate with the admin API on and a gateway that only keeps its context; `disk`
 * is made as a folder of its own, which `overrides` may name.
 */
export async function gate(t: Test, overrides: (disk: string) => Record<string, unknown> = () => ({}), disk: Parameters<Test['testdir']>[0] = {}): Promise<Gate> {
  const top = t.testdir({ data: {}, disk })
  const dataDir = join(top, 'data')
  const engine = process.env.FILEGATE_HTTP_ENGINE // as test/helpers/filegate.ts
  const logs: Line[] = []
  let ctx: GatewayContext | undefined
  const app = await startFilegate(validateConfig({ port: 0, workers: 1, shutdown_grace_seconds: 1, admin_password: ADMIN_PASSWORD, sftp: { port: 'off' }, s3: { port: 'off' }, ...(engine ? { http_engine: engine } : {}), ...overrides(join(top, 'disk')), data_dir: dataDir }), {
    logger: { log: (level, msg, fields = {}) => void logs.push({ level, msg, fields }) },
    gateways: [{ name: 'capture', start: async (c) => void (ctx = c), stop: async () => {} }],
  })
  t.teardown(() => app.close(0))
  const url = `http://127.0.0.1:${app.port}`
  checkAnswers(url)
  const admin = api(url, await adminToken(url))
  return {
    ctx: ctx!,
    url,
    dataDir,
    disk: join(top, 'disk'),
    logs,
    async addUser(body) {
      const res = await admin('POST', '/admin/api/users', {}, { body: JSON.stringify(body) })
      if (res.status !== 200) throw new Error(`adding a user: ${res.status} ${await res.text()}`)
    },
    login: (req) => ctx!.login.login({ door: 'sftp', user: '', address: '192.0.2.1', requestId: 'r1', ...req }),
  }
}

