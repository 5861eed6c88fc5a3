/**
 * The systemd unit of deploy/: systemd reads every line of it (no unknown key, no bad
 * value: systemd-analyze says nothing), and it waits longer than the grace filegate gives
 * transfers on SIGTERM (deploy/filegate.env), so a rolling restart cuts nothing that
 * could still finish. (The balancers' files are run by cluster.test.ts.)
 */
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { requireBinary } from '../servers/process.js'
import { fillDeployFile, parseEnvFile } from '../helpers/deploy-files.js'

const UNIT = fileURLToPath(new URL('../../deploy/filegate.service', import.meta.url))

t.test('systemd reads the unit without a complaint', async (t) => {
  const r = spawnSync(requireBinary('/usr/bin/systemd-analyze', 'systemd'), ['verify', UNIT], { encoding: 'utf8' })
  t.equal(r.status, 0, 'systemd-analyze verify succeeds')
  // Unknown keys and bad values are only warnings for systemd: each one is a line here.
  t.equal((r.stdout + r.stderr).trim(), '', 'and warns about nothing')
})

t.test('the unit stops with SIGTERM and waits longer than the shutdown grace', async (t) => {
  const unit = readFileSync(UNIT, 'utf8')
  const env = parseEnvFile(fillDeployFile('filegate.env', { STATE_URL: 'x', SECRET_FILE: 'x', STAGING_DIR: 'x', DATA_DIR: 'x', PUBLIC_URL: 'x', CONFIG_FILE: 'x', BALANCERS: 'x' }))
  t.match(unit, /^KillSignal=SIGTERM$/m, 'SIGTERM')
  const stop = Number(/^TimeoutStopSec=(\d+)$/m.exec(unit)?.[1])
  const grace = Number(env.FILEGATE_SHUTDOWN_GRACE_SECONDS)
  t.ok(grace > 0 && stop > grace, `TimeoutStopSec (${stop} s) > FILEGATE_SHUTDOWN_GRACE_SECONDS (${grace} s)`)
})
