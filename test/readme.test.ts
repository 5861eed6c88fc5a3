/**
 * The README runs as written: its shell blocks marked ```` ```sh test ```` (the
 * walk-through and one example per door) run in order, in one bash, in a fresh folder,
 * against the built service started as the README starts it (its admin password, the
 * default SFTP and S3 gateways), with real clients: curl, OpenSSH's sftp, the aws CLI
 * and the MCP Inspector's CLI. Only the ports differ: free ones, so that the test runs
 * beside others; the README's 8334, 2222 and 8335 are replaced in the commands.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, readFileSync, readdirSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { freePort, requireBinary } from './servers/process.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const README = readFileSync(join(ROOT, 'README.md'), 'utf8')
const START = "FILEGATE_ADMIN_PASSWORD='a long admin password' npm start &"

/** The bodies of the blocks opened with ```sh test, in order. */
function testedBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```sh test\n([\s\S]*?)^```$/gm)].map((m) => m[1]!)
}

function run(cmd: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number }): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (c: Buffer) => (out += c.toString()))
    child.stderr.on('data', (c: Buffer) => (out += c.toString()))
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs)
    child.once('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, out })
    })
  })
}

t.test('the README starts the service as the test does, and marks its runnable blocks', async (t) => {
  t.ok(README.includes(`\`\`\`sh\n${START}\n\`\`\``), 'the walk-through starts the service with the admin password, in the background')
  const blocks = testedBlocks(README)
  t.ok(blocks.length >= 4, `the walk-through and the doors' examples are marked (${blocks.length} blocks)`)
  t.match(blocks[0]!, /^until curl -sf http:\/\/127\.0\.0\.1:8334\/healthz/, 'the first waits until the service answers')
  for (const door of [/api\/files\/cat/, /sftp .*-P 2222/, /aws --endpoint-url http:\/\/127\.0\.0\.1:8335/, /--method tools\/call/]) {
    t.ok(blocks.some((b) => door.test(b)), `a runnable example matches ${door}`)
  }
})

t.test("the README's commands run as written against a started filegate", async (t) => {
  requireBinary('/usr/bin/sftp', 'openssh-client')
  requireBinary('/usr/bin/aws', 'awscli')
  const main = join(ROOT, 'dist', 'front', 'main.js')
  if (!existsSync(main)) throw new Error('dist/ is missing: build first (npm run build)')
  const work = t.testdir()
  // The Inspector's example runs from the repository's node_modules, as a user's would.
  symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'))
  const [http, sftp, s3] = [await freePort(), await freePort(), await freePort()]
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    // The aws CLI's config and credentials: none but what the README sets.
    HOME: work,
    LANG: 'C.UTF-8',
  }
  const service: ChildProcess = spawn(process.execPath, [main, '--port', String(http), '--data-dir', join(work, 'data')], {
    cwd: work,
    env: { ...env, FILEGATE_ADMIN_PASSWORD: 'a long admin password', FILEGATE_SFTP_PORT: String(sftp), FILEGATE_S3_PORT: String(s3) },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  t.teardown(() => void service.kill('SIGKILL'))

  const script = testedBlocks(README)
    .join('\n')
    .replaceAll('127.0.0.1:8334', `127.0.0.1:${http}`)
    .replaceAll('127.0.0.1:8335', `127.0.0.1:${s3}`)
    .replaceAll('-P 2222', `-P ${sftp}`)
  // Generous: it covers the service's start and the clients' own (the aws CLI, Python).
  const r = await run('bash', ['-e', '-o', 'pipefail', '-c', script], { cwd: work, env, timeoutMs: 180_000 })
  t.equal(r.code, 0, 'every command succeeded')
  t.match(r.out, /hello filegate/, 'the walk-through downloaded its upload')
  t.match(r.out, /"name":"notes\.md"/, 'and listed the folder it made')
  t.match(r.out, /hello\.txt/, 'sftp listed the uploaded file')
  t.match(r.out, /\d+ hello\.txt/, 'the aws CLI listed it in its bucket')
  t.match(r.out, /\[FILE\] notes\.md/, "the MCP tool listed alice's folder")
  const spaces = readdirSync(join(work, 'data', 'gateway-tmp')).filter((n) => n.startsWith('bob.'))
  t.equal(spaces.length, 1, "bob's gateway space exists")
  t.equal(readFileSync(join(work, 'data', 'gateway-tmp', spaces[0]!, 'backup', 'hello.txt'), 'utf8'), 'hello filegate\n', 'the S3 copy holds the bytes sent over SFTP')
  if (r.code !== 0) t.comment(r.out)
})
