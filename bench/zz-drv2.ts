import { randomBytes } from 'node:crypto'
import { writeFileSync, chownSync } from 'node:fs'
import type { Test } from 'tap'
import ssh2 from 'ssh2'
import { startSshd } from '../test/servers/sshd.js'
const cleanups: (() => unknown)[] = []
const t = { teardown: (fn: () => unknown) => void cleanups.push(fn) } as unknown as Test
const MiB = 1024 * 1024
const size = 256 * MiB
const sshd = await startSshd(t)
const data = Buffer.concat(Array.from({ length: 256 }, () => randomBytes(MiB)))
writeFileSync(`${sshd.root}/big.bin`, data); chownSync(`${sshd.root}/big.bin`, sshd.uid, sshd.gid)
const ssh = new ssh2.Client()
await new Promise<void>((res, rej) => { ssh.once('ready', () => res()).once('error', rej); ssh.connect({ host: '127.0.0.1', port: sshd.port, username: sshd.username, password: sshd.password }) })
const sftp = await new Promise<ssh2.SFTPWrapper>((res, rej) => ssh.sftp((e, s) => e ? rej(e) : res(s)))
console.log('maxReadLen', (sftp as any)._maxReadLen, (sftp as any)._maxWriteLen)
const h = await new Promise<Buffer>((res, rej) => sftp.open(`${sshd.root}/big.bin`, 'r', (e, h) => e ? rej(e) : res(h)))
async function pipelined(ahead: number, len: number, alloc: 'slow' | 'reuse') {
  const t0 = performance.now()
  let next = 0; const q: Promise<number>[] = []
  const pool = alloc === 'reuse' ? Array.from({ length: ahead + 1 }, () => Buffer.allocUnsafe(len)) : []
  let pi = 0
  const issue = () => { while (q.length < ahead && next < size) { const pos = next; const n = Math.min(len, size - pos); next += n; const buf = alloc === 'slow' ? Buffer.allocUnsafeSlow(n) : pool[pi++ % pool.length]!; q.push(new Promise((res, rej) => sftp.read(h, buf, 0, n, pos, (e, got) => e ? rej(e) : res(got)))) } }
  issue(); let total = 0
  while (q.length) { total += await q.shift()!; issue() }
  return (size / (performance.now() - t0) / 1e3).toFixed(0)
}
function cbBig(ahead: number, len: number, delay: boolean): Promise<string> {
  return new Promise((resolve) => {
    const big = Buffer.allocUnsafe(ahead * len)
    const t0 = performance.now(); let next = 0; let inflight = 0
    const one = (slot: number) => { const pos = next; const n = Math.min(len, size - pos); next += n; inflight++; sftp.read(h, big, slot * len, n, pos, () => { inflight--; const go = () => { if (next < size) one(slot); else if (inflight === 0) resolve((size / (performance.now() - t0) / 1e3).toFixed(0)) }; delay ? setImmediate(go) : go() }) }
    for (let i = 0; i < ahead && next < size; i++) one(i)
  })
}
function cbLoop(ahead: number, len: number): Promise<string> {
  return new Promise((resolve) => {
    const t0 = performance.now(); let next = 0; let done = 0; let inflight = 0
    const one = () => { const pos = next; const n = Math.min(len, size - pos); next += n; inflight++; const buf = Buffer.allocUnsafeSlow(n); sftp.read(h, buf, 0, n, pos, (e, got) => { inflight--; done += got; if (next < size) one(); else if (inflight === 0) resolve((size / (performance.now() - t0) / 1e3).toFixed(0)) }) }
    while (inflight < ahead && next < size) one()
  })
}
for (let r = 0; r < 3; r++) {
  const t0 = performance.now()
  await new Promise<void>((res, rej) => sftp.fastGet(`${sshd.root}/big.bin`, '/dev/null', { chunkSize: 261120 }, (e) => e ? rej(e) : res()))
  console.log('fastGet first', (size / (performance.now() - t0) / 1e3).toFixed(0))
  console.log('cb 64', await cbLoop(64, 261120))
  console.log('cbBig 64', await cbBig(64, 261120, false))
  console.log('cbBig 64 delay', await cbBig(64, 261120, true))
  console.log('cb 16', await cbLoop(16, 261120))
  for (const [a, l, al] of [[16, 261120, 'slow'], [64, 261120, 'slow']] as const) console.log(a, l, al, await pipelined(a, l, al))
}
ssh.end()
for (const f of cleanups.reverse()) await f()
