/**
 * The SFTP gateway mounted with sshfs (FUSE), as a user would: folder listings show each
 * name once (sshfs sends several READDIRs at once), a file created, written and read back
 * at once works every time (sshfs sends OPEN and STAT back to back, and CLOSE without
 * waiting for its answer), rm -r removes a tree. The mount is in a folder of the test and
 * unmounted at teardown.
 *
 * Everything touching the mount runs in a child process: the gateway answers from this
 * process's event loop, which a synchronous call on the mount would block.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'
import t from 'tap'
import { type Login, runCommand } from './clients.js'
import { BACKENDS, startGateway } from './fixture.js'

const FUSE = existsSync('/dev/fuse')
const skip = FUSE ? false : 'no /dev/fuse on this machine: sshfs cannot mount'

/** Mounts the user's root at a new folder of the test; unmounted at teardown. */
async function mount(t: Test, l: Login): Promise<string> {
  const at = join(t.testdir(), 'mnt')
  await runCommand('/usr/bin/mkdir', ['-p', at])
  const r = await runCommand(
    '/usr/bin/sshfs',
    [
      `${l.user}@127.0.0.1:/`,
      at,
      '-p', String(l.port),
      '-o', 'password_stdin',
      '-o', 'StrictHostKeyChecking=no',
      '-o', 'UserKnownHostsFile=/dev/null',
      '-o', 'PubkeyAuthentication=no',
      '-o', 'LogLevel=ERROR',
    ],
    { input: `${l.password}\n` },
  )
  if (r.code !== 0) throw new Error(`sshfs did not mount (${r.code}): ${r.stderr}`)
  t.teardown(async () => {
    await runCommand('/usr/bin/fusermount', ['-u', '-z', at])
  })
  return at
}

/** `sh -c script` in `cwd`, in a child process. */
const sh = (cwd: string, script: string) => runCommand('/bin/sh', ['-c', `cd "$1" && ${script}`, 'sh', cwd], { timeoutMs: 120_000 })

for (const backend of BACKENDS) {
  t.test(`${backend}: sshfs: listings show each name once`, { skip }, async (t) => {
    const { login, put, mkdir } = await startGateway(t, { backend })
    const few = ['a.txt', 'b.txt', 'c d.txt', 'sub']
    for (const n of few.slice(0, 3)) put(n, n)
    mkdir('sub')
    // More names than one READDIR answer holds.
    const many: string[] = []
    for (let i = 0; i < 340; i++) many.push(`f${String(i).padStart(4, '0')}`)
    for (const n of many) put(`sub/${n}`, n)
    const at = await mount(t, login)
    const top = await sh(at, 'ls -1A')
    t.equal(top.code, 0, top.stderr)
    t.same(top.stdout.split('\n').filter(Boolean).sort(), [...few].sort(), 'the root: each name once')
    const sub = await sh(at, 'ls -1A sub')
    t.equal(sub.code, 0, sub.stderr)
    t.same(sub.stdout.split('\n').filter(Boolean).sort(), many, `a folder of ${many.length}: each name once`)
    const count = await sh(at, 'find . | wc -l')
    t.equal(count.stdout.trim(), String(1 + few.length + many.length), 'find sees every entry once')
  })

  t.test(`${backend}: sshfs: create, write and read back at once, every time; rm -r`, { skip }, async (t) => {
    const { login, root, put } = await startGateway(t, { backend })
    put('old.txt', 'the old content, longer than the new\n')
    const at = await mount(t, login)
    for (let i = 0; i < 10; i++) {
      const r = await sh(at, `echo x${i} > new${i}.txt; cat new${i}.txt`)
      t.equal(r.code, 0, `round ${i}: exit 0 (${r.stderr.trim()})`)
      t.equal(r.stdout, `x${i}\n`, `round ${i}: read back what was written`)
    }
    for (let i = 0; i < 10; i++) t.equal(readFileSync(join(root, `new${i}.txt`), 'utf8'), `x${i}\n`, `new${i}.txt committed`)

    const over = await sh(at, 'echo short > old.txt; cat old.txt; stat -c %s old.txt')
    t.equal(over.stdout, 'short\n6\n', 'an existing file overwritten, read back at its new size')
    const append = await sh(at, 'echo more >> old.txt; cat old.txt')
    t.equal(append.stdout, 'short\nmore\n', 'appended, read back')

    const tree = await sh(
      at,
      'mkdir -p tree/a/b && echo 1 > tree/one && echo 2 > tree/a/two && head -c 300000 /dev/urandom > tree/a/b/big && ' +
        'cp tree/a/b/big tree/copy && cmp tree/a/b/big tree/copy && mv tree/one tree/a/moved && ls -1R tree',
    )
    t.equal(tree.code, 0, `mkdir, write, cp, cmp, mv in a tree: ${tree.stderr}`)
    t.equal(statSync(join(root, 'tree', 'copy')).size, 300_000, 'the copy landed whole')
    t.same(readdirSync(join(root, 'tree', 'a')).sort(), ['b', 'moved', 'two'], 'mv landed')
    const rm = await sh(at, 'rm -r tree && ls -1A')
    t.equal(rm.code, 0, `rm -r: ${rm.stderr}`)
    t.notOk(existsSync(join(root, 'tree')), 'rm -r removed the tree')
    t.notMatch(rm.stdout, /tree/, 'and the listing no longer shows it')
  })
}
