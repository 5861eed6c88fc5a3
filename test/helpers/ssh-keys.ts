/**
 * SSH key pairs for tests, made by OpenSSH's own ssh-keygen (an independent
 * implementation): the public line, the private key, and the fingerprint as
 * `ssh-keygen -l` prints it.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface TestKey {
  /** The .pub line: `ssh-ed25519 AAAA... comment`. */
  readonly pub: string
  /** The private key, OpenSSH format, no passphrase. */
  readonly priv: string
  /** `SHA256:...` */
  readonly fingerprint: string
}

export function sshKeygen(type: 'ed25519' | 'ecdsa' | 'rsa' | 'dsa', opts: { bits?: number; comment?: string } = {}): TestKey {
  const dir = mkdtempSync(join(tmpdir(), 'filegate-key-'))
  try {
    const file = join(dir, 'key')
    execFileSync('ssh-keygen', ['-q', '-t', type, ...(opts.bits ? ['-b', String(opts.bits)] : []), '-N', '', '-C', opts.comment ?? 'test@filegate', '-f', file])
    const fingerprint = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${file}.pub`], { encoding: 'utf8' }).split(' ')[1]!
    return { pub: readFileSync(`${file}.pub`, 'utf8').trim(), priv: readFileSync(file, 'utf8'), fingerprint }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
