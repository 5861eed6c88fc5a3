/**
 * TEMPORARY (until the gateway login, front/gateway-login.ts, lands on main): a login
 * that lets one user in with a password, to the real gateway layer
 * (front/gateway-fs.ts) over a backend, on a worker pool of the test's.
 */
import { join } from 'node:path'
import type { Test } from 'tap'
import type { BackendSpec } from '../../../core/backend.js'
import type { Gateway, GatewayLogin } from '../../../core/gateway.js'
import { createProtocolFs } from '../../../front/gateway-fs.js'
import { WorkerPool } from '../../../workers/pool.js'

export function withTempLogin(t: Test, g: Gateway, o: { spec: BackendSpec; dataDir: string; user: string; password: string; readOnly?: boolean; key?: Buffer }): Gateway {
  const pool = new WorkerPool({ workers: 1, tasksPerWorker: 64, maxQueue: 1000 })
  t.teardown(() => pool.close())
  const login: GatewayLogin = {
    async login(req) {
      const keyOk = o.key !== undefined && req.publicKey !== undefined && Buffer.from(req.publicKey.data).equals(o.key)
      if (req.user === o.user && (req.password === o.password || keyOk)) {
        const fs = await createProtocolFs({ pool, spec: o.spec, readOnly: o.readOnly ?? false, stagingDir: join(o.dataDir, 'gateway-staging') })
        return { ok: true, user: o.user, fs }
      }
      await new Promise((r) => setTimeout(r, 200))
      return { ok: false, reason: 'refused', message: 'refused' }
    },
    keyAuthorized: async (user, key) => user === o.user && o.key !== undefined && Buffer.from(key.data).equals(o.key),
  }
  return {
    name: g.name,
    get port() {
      return g.port ?? 0
    },
    start: (ctx) => g.start({ ...ctx, login }),
    stop: () => g.stop(),
  }
}
