/**
 * @module test/gateway-fs/local.test
 * The gateway layer over a real worker pool and the local driver (tmp folders).
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import t from 'tap'
import { createProtocolFs } from '../../front/gateway-fs.js'
import { WorkerPool } from '../../workers/pool.js'
import { runCases } from './cases.js'

const pool = new WorkerPool({ workers: 2, tasksPerWorker: 16, maxQueue: 1000 })
t.teardown(() => pool.close())

await runCases(t, 'gateway fs over local', async (t) => {
  const root = t.testdir()
  const staging = join(t.testdirName + '-staging')
  const spec = { type: 'local' as const, root }
  const fs = await createProtocolFs({ pool, spec, readOnly: false, stagingDir: staging })
  const readOnly = await createProtocolFs({ pool, spec, readOnly: true, stagingDir: staging })
  t.teardown(() => {
    fs.close()
    readOnly.close()
  })
  return {
    fs,
    readOnly,
    backing: root,
    transfers: () => pool.stats.transfers,
    put: (rel, data) => {
      mkdirSync(dirname(join(root, rel)), { recursive: true })
      writeFileSync(join(root, rel), data)
    },
    mkdir: (rel) => mkdirSync(join(root, rel), { recursive: true }),
  }
})
