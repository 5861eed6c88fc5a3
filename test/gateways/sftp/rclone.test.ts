/**
 * The SFTP gateway with rclone (Debian's 1.60): a tree with hostile names copied up,
 * checked by downloading it back, modification times kept.
 */
import { randomBytes } from 'node:crypto'
import { mkdirSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import t from 'tap'
import { serverDir } from '../../servers/process.js'
import { type Login, runCommand } from './clients.js'
import { BACKENDS, startGateway } from './fixture.js'

const NAMES = ['plain.txt', 'with space.txt', "it's \"quoted\".txt", 'ünïcødé — 日本語.txt', '#%&?*.txt', '-leading-dash.txt', '  spaced  .txt', 'emoji 🎉.bin']

async function rclone(l: Login, args: readonly string[]) {
  const obscured = await runCommand('/usr/bin/rclone', ['obscure', l.password])
  const env = {
    ...process.env,
    RCLONE_CONFIG: '/dev/null',
    RCLONE_CONFIG_GW_TYPE: 'sftp',
    RCLONE_CONFIG_GW_HOST: '127.0.0.1',
    RCLONE_CONFIG_GW_PORT: String(l.port),
    RCLONE_CONFIG_GW_USER: l.user,
    RCLONE_CONFIG_GW_PASS: obscured.stdout.trim(),
    // No remote shell: the gateway serves only the sftp subsystem.
    RCLONE_CONFIG_GW_SHELL_TYPE: 'none',
    RCLONE_CONFIG_GW_DISABLE_HASHCHECK: 'true',
  }
  return runCommand('/usr/bin/rclone', [...args], { env, timeoutMs: 120_000 })
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? walk(join(dir, d.name)) : [join(dir, d.name)]))
}

for (const backend of BACKENDS) {
  t.test(`${backend}: rclone copy and check --download: hostile names, mtimes kept`, async (t) => {
    const { login, root } = await startGateway(t, { backend })
    const local = serverDir(t, 'rclone')
    const tree = join(local, 'tree')
    let n = 0
    for (const dir of ['', 'sub dir', 'sub dir/ñested #1', '-dash dir']) {
      mkdirSync(join(tree, dir), { recursive: true })
      for (const name of NAMES) {
        const file = join(tree, dir, name)
        writeFileSync(file, randomBytes(n++ % 3 === 0 ? 300_000 : 1000 + n))
        utimesSync(file, 1_600_000_000 + n, 1_600_000_000 + n * 1000)
      }
    }
    const up = await rclone(login, ['copy', tree, 'gw:up'])
    t.equal(up.code, 0, `rclone copy: ${up.stderr}`)
    const check = await rclone(login, ['check', '--download', tree, 'gw:up'])
    t.equal(check.code, 0, `rclone check --download: ${check.stderr}`)
    t.match(check.stderr, `0 differences found`, 'no differences')
    const want = walk(tree).map((f) => relative(tree, f)).sort()
    t.same(walk(join(root, 'up')).map((f) => relative(join(root, 'up'), f)).sort(), want, 'every name as it was')
    for (const rel of want) {
      t.equal(Math.floor(statSync(join(root, 'up', rel)).mtimeMs / 1000), Math.floor(statSync(join(tree, rel)).mtimeMs / 1000), `mtime kept: ${rel}`)
    }
    const back = await rclone(login, ['copy', 'gw:up', join(local, 'back')])
    t.equal(back.code, 0, `rclone copy back: ${back.stderr}`)
    const again = await rclone(login, ['check', tree, join(local, 'back')])
    t.equal(again.code, 0, `the round trip is identical: ${again.stderr}`)
  })
}
