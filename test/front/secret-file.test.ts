/**
 * @module test/front/secret-file.test
 * `secret_file` / FILEGATE_SECRET_FILE (docs/cluster-state.md): nodes with their own
 * data directories but one secret file accept each other's tokens, whichever of the
 * three spellings the file uses; the file is never written and no secret is generated
 * in the data directory; a file group or others may read, or of another size, stops
 * the CLI with a clear message that does not show the secret.
 */
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmod, readFile, stat, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'

const MAIN = fileURLToPath(new URL('../../dist/front/main.js', import.meta.url))

/** The CLI with FILEGATE_SECRET_FILE set: its exit code and stderr (it must not start). */
function cli(secretFile: string, dataDir: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const env = { ...process.env, FILEGATE_SECRET_FILE: secretFile, FILEGATE_SFTP_PORT: 'off', FILEGATE_S3_PORT: 'off' }
    execFile(process.execPath, [MAIN, '--port', '0', '--data-dir', dataDir, '--workers', '1'], { env, timeout: 30_000 }, (err, _out, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stderr })
    })
  })
}

t.test('nodes with one secret file accept each other\'s tokens, in every spelling; the file is only read', async (t) => {
  const dir = t.testdir()
  const secret = randomBytes(32)
  const files = { raw: secret, hex: `${secret.toString('hex')}\n`, base64: `  ${secret.toString('base64')}\n` }
  const nodes = []
  for (const [name, content] of Object.entries(files)) {
    const file = join(dir, `secret.${name}`)
    await writeFile(file, content, { mode: 0o600 })
    nodes.push({ name, file, content, srv: await startTestServer(t, { secret_file: file, data_dir: join(dir, `data-${name}`) }) })
  }
  const token = await tmpSession(nodes[0]!.srv.url, 'alice')
  for (const n of nodes) {
    const res = await api(n.srv.url, token)('GET', '/api/session')
    t.equal(res.status, 200, `a token from the raw-file node works at the ${n.name} node`)
    await res.arrayBuffer()
    t.same(await readFile(n.file), Buffer.from(n.content), `the ${n.name} file is unchanged`)
    t.equal(((await stat(n.file)).mode & 0o777).toString(8), '600')
    t.notOk(existsSync(join(n.srv.dataDir, 'state', 'secret')), 'no secret generated in the data directory')
  }
  const other = await startTestServer(t, { data_dir: join(dir, 'data-own') })
  t.equal((await api(other.url, token)('GET', '/api/session')).status, 401, 'a node with its own secret refuses it')
})

t.test('a secret file group or others may read, or not 32 bytes, stops the CLI with a clear message', async (t) => {
  const dir = t.testdir()
  const file = join(dir, 'secret')
  const hex = randomBytes(32).toString('hex')
  await writeFile(file, hex, { mode: 0o640 })
  await chmod(file, 0o640)
  const open = await cli(file, join(dir, 'data'))
  t.equal(open.code, 1, 'refused')
  t.match(open.stderr, /secret_file .*secret is open to group or others \(mode 0640\): make it readable by filegate's user only \(chmod 600\)/)
  t.notOk(open.stderr.includes(hex), 'the secret is not shown')
  await writeFile(file, hex.slice(2))
  await chmod(file, 0o600)
  const short = await cli(file, join(dir, 'data'))
  t.equal(short.code, 1)
  t.match(short.stderr, /must hold 32 bytes: raw, or as 64 hex digits, or as 44 base64 characters/)
  t.notOk(short.stderr.includes(hex.slice(2)), 'the content is not shown')
  const missing = await cli(join(dir, 'nope'), join(dir, 'data'))
  t.equal(missing.code, 1)
  t.match(missing.stderr, /secret_file .*nope cannot be read: ENOENT/)
  t.notOk(existsSync(join(dir, 'data', 'state', 'secret')), 'no secret generated instead')
})
