/**
 * Real SFTP clients against the gateway under test: OpenSSH's `sftp` (batch mode, the
 * password through SSH_ASKPASS), ssh2's client, rclone and paramiko (Debian's).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { chmodSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'
import { serverDir } from '../../servers/process.js'
import ssh2, { type SFTPWrapper } from 'ssh2'
const { Client } = ssh2

export interface Login {
  readonly port: number
  readonly user: string
  readonly password: string
}

export interface Ran {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs a command to its end, collecting its output (never throws on a non-zero exit). */
export function runCommand(cmd: string, args: readonly string[], opts: { env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number } = {}): Promise<Ran> & { child: ChildProcess } {
  const child = spawn(cmd, args, { env: opts.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()))
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()))
  // A child that leaves before reading all its input (sshfs daemonizes) is no error of the run.
  child.stdin!.on('error', () => {})
  child.stdin!.end(opts.input ?? '')
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000)
  const done = new Promise<Ran>((resolve) => {
    child.once('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  }) as Promise<Ran> & { child: ChildProcess }
  done.child = child
  return done
}

/** An SSH_ASKPASS script printing `password`, in a folder of the test. */
export function askpass(dir: string, password: string): string {
  const path = join(dir, `askpass-${Math.random().toString(36).slice(2)}.sh`)
  writeFileSync(path, `#!/bin/sh\nprintf '%s\\n' '${password.replace(/'/g, `'\\''`)}'\n`)
  chmodSync(path, 0o700)
  return path
}

const SSH_OPTS = ['-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR']

/** OpenSSH `sftp -b -` with a password login; the batch comes on stdin. `extra` comes first: ssh keeps an option's first value. */
export function sftpBatch(t: Test, l: Login, batch: string, extra: readonly string[] = []): Promise<Ran> & { child: ChildProcess } {
  const env = { ...process.env, SSH_ASKPASS: askpass(serverDir(t, 'askpass'), l.password), SSH_ASKPASS_REQUIRE: 'force', DISPLAY: ':0' }
  return runCommand('/usr/bin/sftp', [...extra, ...SSH_OPTS, '-o', 'BatchMode=no', '-o', 'PubkeyAuthentication=no', '-o', 'NumberOfPasswordPrompts=1', '-P', String(l.port), '-b', '-', `${l.user}@127.0.0.1`], { env, input: batch })
}

/** `ssh ... command` with a password (for the refusal of exec/shell; `-s` in `extra`: a subsystem), `input` on its stdin. */
export function sshExec(t: Test, l: Login, command: string, extra: readonly string[] = [], input = ''): Promise<Ran> {
  const env = { ...process.env, SSH_ASKPASS: askpass(serverDir(t, 'askpass'), l.password), SSH_ASKPASS_REQUIRE: 'force', DISPLAY: ':0' }
  return runCommand('/usr/bin/ssh', [...extra, ...SSH_OPTS, '-o', 'BatchMode=no', '-o', 'PubkeyAuthentication=no', '-o', 'NumberOfPasswordPrompts=1', '-p', String(l.port), `${l.user}@127.0.0.1`, command], { env, input })
}

/** ssh2's client, logged in, with its SFTP channel; closed at teardown. */
export async function ssh2Sftp(t: Test, l: Login, cfg: Record<string, unknown> = {}): Promise<{ client: InstanceType<typeof Client>; sftp: SFTPWrapper }> {
  const client = new Client()
  t.teardown(() => client.end())
  await new Promise<void>((resolve, reject) => {
    client.once('ready', resolve).once('error', reject)
    client.connect({ host: '127.0.0.1', port: l.port, username: l.user, password: l.password, readyTimeout: 20_000, ...cfg })
  })
  const sftp = await new Promise<SFTPWrapper>((resolve, reject) => client.sftp((err, s) => (err ? reject(err) : resolve(s))))
  return { client, sftp }
}

/** Promisified ssh2 SFTP calls: `call(sftp.stat.bind(sftp), '/x')`. */
export function call<T>(fn: (...args: never[]) => void, ...args: unknown[]): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    ;(fn as (...a: unknown[]) => void)(...args, (err: Error | null | undefined, v: T) => (err ? reject(err) : resolve(v)))
  })
}

/** Runs a paramiko script (Debian's python3) with PORT, USER, PASSWORD in its environment; prints go to stdout. */
export function paramiko(l: Login, script: string, env: Record<string, string> = {}): Promise<Ran> {
  const prelude = `
import os, paramiko, stat, sys
t = paramiko.Transport(('127.0.0.1', int(os.environ['PORT'])))
t.connect(username=os.environ['USER_'], password=os.environ['PASSWORD'])
sftp = paramiko.SFTPClient.from_transport(t)
`
  return runCommand('/usr/bin/python3', ['-c', prelude + script], {
    env: { ...process.env, PORT: String(l.port), USER_: l.user, PASSWORD: l.password, ...env },
    timeoutMs: 120_000,
  })
}

/** OpenSSH `scp` (≥ 9: over SFTP) with a password login; `args` are scp's own (files, -p, -r). */
export function scp(t: Test, l: Login, args: readonly string[]): Promise<Ran> {
  const env = { ...process.env, SSH_ASKPASS: askpass(serverDir(t, 'askpass'), l.password), SSH_ASKPASS_REQUIRE: 'force', DISPLAY: ':0' }
  return runCommand('/usr/bin/scp', [...SSH_OPTS, '-o', 'BatchMode=no', '-o', 'PubkeyAuthentication=no', '-o', 'NumberOfPasswordPrompts=1', '-P', String(l.port), ...args], { env })
}

/** `user@127.0.0.1:path`, as scp names a remote file. */
export const remote = (l: Login, path: string): string => `${l.user}@127.0.0.1:${path}`
