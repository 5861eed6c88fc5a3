/**
 * @module test/servers/users
 * Throwaway local users for the test servers (sshd, vsftpd and smbd log them in),
 * removed at teardown. Needs root.
 */
import { randomBytes } from 'node:crypto'
import { chownSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'
import { run } from './process.js'

export interface TestUser {
  readonly username: string
  readonly password: string
  readonly uid: number
  readonly gid: number
  /** The user's home folder (created by useradd -m). */
  readonly home: string
}

/** /etc/passwd is locked by each useradd/userdel: parallel test files retry. */
export function retryingPasswdLock(cmd: string, args: readonly string[], input?: string): string {
  for (let attempt = 0; ; attempt++) {
    try {
      return run(cmd, args, input)
    } catch (err) {
      const msg = String((err as { stderr?: unknown }).stderr ?? err)
      if (attempt >= 40 || !/lock|try again/i.test(msg)) throw new Error(`${cmd} ${args.join(' ')} failed: ${msg}`)
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50 + Math.floor(Math.random() * 100))
    }
  }
}

/**
 * A local user `fgtest_<random>` with a password and a home folder, removed (with
 * its home) at `t`'s teardown. Its shell is /bin/bash, which /etc/shells lists
 * (vsftpd's PAM stack refuses users whose shell is not listed).
 */
export function createTestUser(t: Test): TestUser {
  const username = `fgtest_${randomBytes(5).toString('hex')}`
  const password = randomBytes(12).toString('base64url')
  retryingPasswdLock('useradd', ['-m', '-s', '/bin/bash', username])
  t.teardown(() => {
    try {
      retryingPasswdLock('userdel', ['-r', '-f', username])
    } catch {
      // Already gone: nothing to clean.
    }
  })
  retryingPasswdLock('chpasswd', [], `${username}:${password}\n`)
  const [uid, gid, home] = run('getent', ['passwd', username]).trim().split(':').filter((_, i) => i === 2 || i === 3 || i === 5)
  return { username, password, uid: Number(uid), gid: Number(gid), home: home! }
}

/** A fresh folder in the user's home, owned by the user: its name (relative to the home). */
export function userFolder(user: { readonly root: string; readonly uid: number; readonly gid: number }): string {
  const name = `t-${randomBytes(6).toString('hex')}`
  const abs = join(user.root, name)
  mkdirSync(abs)
  chownSync(abs, user.uid, user.gid)
  return name
}
