/**
 * scripts/test-deps.sh, run by `npm test` before anything else: it names and installs
 * the Debian packages the tests use, and stops at once, saying why, when it cannot.
 * Packages are made to look missing with TEST_DEPS_PREFIX (every checked path then
 * lies under a folder that does not exist) and --dry-run, so nothing is installed or
 * removed here; the non-root cases run the script as `nobody` through setpriv.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import t from 'tap'

const SCRIPT = new URL('../scripts/test-deps.sh', import.meta.url)
const text = readFileSync(SCRIPT, 'utf8')
const TEST_PACKAGES = ['unzip', 'openssh-server', 'openssh-client', 'vsftpd', 'openssl', 'samba', 'smbclient', 'python3-paramiko', 'rclone', 'sshfs', 'awscli', 'python3-boto3', 's3cmd', 'chromium', 'fonts-dejavu-core', 'postgresql', 'nginx-light', 'libnginx-mod-stream', 'haproxy']

/** Runs the script (from stdin, so that any user can read it), optionally as `nobody`. */
function deps(args: string[], env: Record<string, string> = {}, asNobody = false) {
  const cmd = asNobody ? ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups', 'bash'] : ['bash']
  const r = spawnSync(cmd[0]!, [...cmd.slice(1), '-s', '--', ...args], { input: text, encoding: 'utf8', env: { ...process.env, ...env } })
  return { code: r.status, out: r.stdout, err: r.stderr }
}

t.test('with every package present it says nothing and succeeds', async (t) => {
  t.same(deps(['test']), { code: 0, out: '', err: '' })
})

t.test('missing packages are named, with the apt-get command that installs them', async (t) => {
  const r = deps(['--dry-run', 'test'], { TEST_DEPS_PREFIX: '/nonexistent-test-deps' })
  t.equal(r.code, 0, r.err)
  t.match(r.out, `installing the Debian packages the test step needs: ${TEST_PACKAGES.join(' ')}`)
  t.match(r.out, `apt-get install -y --no-install-recommends ${TEST_PACKAGES.join(' ')}`)
  const build = deps(['--dry-run', 'build'], { TEST_DEPS_PREFIX: '/nonexistent-test-deps' })
  t.match(build.out, 'apt-get install -y --no-install-recommends make g++ python3')
})

t.test('an unknown argument is refused', async (t) => {
  const r = deps(['tests'])
  t.equal(r.code, 2)
  t.match(r.err, /usage: .*\[--dry-run\] \[test\|build\]/)
})

const canDrop = process.getuid?.() === 0 && existsSync('/usr/bin/setpriv')
t.test('as a user that is not root', { skip: canDrop ? false : 'needs root and setpriv to run the script as nobody' }, async (t) => {
  // The tests add system users and start servers as root: the run stops at once, in one line.
  const r = deps(['test'], {}, true)
  t.equal(r.code, 1)
  t.equal(r.out, '')
  t.match(r.err, /^npm test must run as root \(e\.g\. sudo npm test\): the tests add throwaway system users \(useradd\) and start sshd, vsftpd and smbd as root\.\n$/)
  // Build tools without root nor passwordless sudo: the one command to run.
  const b = deps(['build'], { TEST_DEPS_PREFIX: '/nonexistent-test-deps' }, true)
  t.equal(b.code, 1)
  t.match(b.err, /^missing Debian packages: make g\+\+ python3 \(not root, and no passwordless sudo to install them\): run  sudo apt-get install -y --no-install-recommends make g\+\+ python3\n$/)
})
