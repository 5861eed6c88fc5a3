import { randomBytes } from 'node:crypto'
import { writeFileSync, chownSync } from 'node:fs'
import { promisify } from 'node:util'
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
for (let r = 0; r < 3; r++) {
  let t0 = performance.now(); let n = 0
  for await (const c of d.read(ctx(), '/big.bin')) n += c.length
  console.log('driver read', (size / (performance.now() - t0) / 1e3).toFixed(0), 'MB/s', n)
  t0 = performance.now()
  await d.write(ctx(), '/up.bin', (async function* () { for (let i = 0; i < 256; i++) yield data.subarray(i * MiB, (i + 1) * MiB) })())
  console.log('driver write', (size / (performance.now() - t0) / 1e3).toFixed(0), 'MB/s')
  t0 = performance.now()
  await new Promise<void>((res, rej) => sftp.fastGet(`${sshd.root}/big.bin`, '/dev/null', { chunkSize: 261120 }, (e) => e ? rej(e) : res()))
  console.log('fastGet', (size / (performance.now() - t0) / 1e3).toFixed(0), 'MB/s')
  t0 = performance.now()
  await new Promise<void>((res, rej) => sftp.fastPut(`${sshd.root}/big.bin`, `${sshd.root}/up2.bin`, { chunkSize: 261120 }, (e) => e ? rej(e) : res()))
  console.log('fastPut', (size / (performance.now() - t0) / 1e3).toFixed(0), 'MB/s')
}
ssh.end(); await d.close()
for (const f of cleanups.reverse()) await f()
