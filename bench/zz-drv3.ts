import { randomBytes } from 'node:crypto'
import { writeFileSync, chownSync } from 'node:fs'
import type { Test } from 'tap'
import ssh2 from 'ssh2'
import { createSftpDriver } from '../workers/drivers/sftp.js'
import { startSshd } from '../test/servers/sshd.js'
const cleanups: (() => unknown)[] = []
const t = { teardown: (fn: () => unknown) => void cleanups.push(fn) } as unknown as Test
const MiB = 1024 * 1024
const size = 256 * MiB
const sshd = await startSshd(t)
const data = Buffer.concat(Array.from({ length: 256 }, () => randomBytes(MiB)))
writeFileSync(`${sshd.root}/big.bin`, data); chownSync(`${sshd.root}/big.bin`, sshd.uid, sshd.gid)
const d = await createSftpDriver({ hostname: '127.0.0.1', port: sshd.port, username: sshd.username, password: sshd.password, root: '' })
const ctx = () => ({ signal: new AbortController().signal, requestId: 'x' })
const ssh = new ssh2.Client()
await new Promise<void>((res, rej) => { ssh.once('ready', () => res()).once('error', rej); ssh.connect({ host: '127.0.0.1', port: sshd.port, username: sshd.username, password: sshd.password }) })
const sftp = await new Promise<ssh2.SFTPWrapper>((res, rej) => ssh.sftp((e, s) => e ? rej(e) : res(s)))
const variants: Record<string, unknown> = {
  'a16 l15': { ahead: 16, low: 15, imm: false },
  'a32 l16': { ahead: 32, low: 16, imm: false },
  'a64 l32': { ahead: 64, low: 32, imm: false },
  'a32 l31 imm': { ahead: 32, low: 31, imm: true },
  'a64 l32 imm': { ahead: 64, low: 32, imm: true },
}
const res: Record<string, number[]> = {}
for (let r = 0; r < 5; r++) {
  for (const [k, v] of Object.entries(variants)) {
    ;(globalThis as any).__v = v
    const t0 = performance.now()
    for await (const _c of d.read(ctx(), '/big.bin'));
    ;(res[k] ??= []).push(size / (performance.now() - t0) / 1e3)
  }
  const t0 = performance.now()
  await new Promise<void>((res, rej) => sftp.fastGet(`${sshd.root}/big.bin`, '/dev/null', { chunkSize: 261120 }, (e) => e ? rej(e) : res()))
  ;(res.fastGet ??= []).push(size / (performance.now() - t0) / 1e3)
}
for (const [k, xs] of Object.entries(res)) console.log(k.padEnd(14), xs.map((x) => x.toFixed(0)).join(' '), ' median', [...xs].sort((a, b) => a - b)[2]!.toFixed(0))
ssh.end(); await d.close()
for (const f of cleanups.reverse()) await f()
