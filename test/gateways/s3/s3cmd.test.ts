/**
 * The S3 gateway with s3cmd (Debian's package): `s3cmd sync` of a tree up, a change
 * and a removal synced again (`--delete-removed`), and the tree synced back down to an
 * empty folder, byte for byte; over a local folder and the sftp backend.
 */
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import t from 'tap'
import { requireBinary, serverDir } from '../../servers/process.js'
import { runCommand } from '../sftp/clients.js'
import { BACKENDS, type S3Gw, startS3Gateway } from './fixture.js'

const S3CMD = requireBinary('/usr/bin/s3cmd', 's3cmd')

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((d) => (d.isDirectory() ? walk(join(dir, d.name)) : [join(dir, d.name)]))
    .sort()
}

/** Relative path → content of every file under `dir`. */
const tree = (dir: string): Record<string, string> => Object.fromEntries(walk(dir).map((f) => [relative(dir, f), readFileSync(f).toString('base64')]))

function s3cmd(gw: S3Gw, dir: string, args: readonly string[]) {
  const config = join(dir, 's3cfg')
  // host_bucket without %(bucket)s: path-style requests; Signature V4 in the gateway's region.
  writeFileSync(
    config,
    [
      '[default]',
      `access_key = ${gw.key.accessKeyId}`,
      `secret_key = ${gw.key.secretAccessKey}`,
      `host_base = 127.0.0.1:${gw.port}`,
      `host_bucket = 127.0.0.1:${gw.port}`,
      'use_https = False',
      'signature_v2 = False',
      'bucket_location = us-east-1',
      '',
    ].join('\n'),
  )
  return runCommand(S3CMD, ['-c', config, '--no-progress', ...args], { env: { PATH: process.env.PATH, HOME: dir }, timeoutMs: 180_000 })
}

for (const backend of BACKENDS) {
  t.test(`${backend}: s3cmd sync up, again with a change and a removal, and back down`, async (t) => {
    const gw = await startS3Gateway(t, { backend })
    const dir = serverDir(t, 's3cmd')
    const ok = async (args: readonly string[]) => {
      const r = await s3cmd(gw, dir, args)
      t.equal(r.code, 0, `s3cmd ${args.join(' ')}: ${r.stderr.slice(-1500)}`)
      return r.stdout
    }
    const src = join(dir, 'src')
    const files: Record<string, string | Buffer> = {
      'a.txt': 'alpha\n',
      'docs/read me.md': '# title\n',
      'docs/deep/er/data.bin': randomBytes(300 * 1024),
      'unicode/café ünï.txt': 'ü\n',
      'empty.txt': '',
      'big.bin': randomBytes(3 * 1024 * 1024),
    }
    for (const [rel, data] of Object.entries(files)) {
      mkdirSync(join(src, rel, '..'), { recursive: true })
      writeFileSync(join(src, rel), data)
    }
    await ok(['mb', 's3://sync'])
    await ok(['sync', `${src}/`, 's3://sync/tree/'])
    t.same(tree(join(gw.root, 'sync', 'tree')), tree(src), 'up: the tree as it is on disk')

    writeFileSync(join(src, 'a.txt'), 'alpha, changed\n')
    rmSync(join(src, 'docs', 'read me.md'))
    await ok(['sync', '--delete-removed', `${src}/`, 's3://sync/tree/'])
    t.same(tree(join(gw.root, 'sync', 'tree')), tree(src), 'again: the change and the removal synced')

    const back = join(dir, 'back')
    mkdirSync(back)
    await ok(['sync', 's3://sync/tree/', `${back}/`])
    t.same(tree(back), tree(src), 'down: the same tree, byte for byte')
    const listed = await ok(['ls', '-r', 's3://sync/tree/'])
    t.equal(listed.trim().split('\n').length, Object.keys(tree(src)).length, 's3cmd ls -r lists each object once')
  })
}
