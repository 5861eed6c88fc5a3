/**
 * @module bench/backend-sftp-ftp
 * Download and upload MB/s of one file (BENCH_SIZE_MB, default 256 MiB of random
 * bytes) on loopback, in the same run:
 * - through filegate's HTTP API (curl, GET /api/files/cat and POST with -T) on an
 *   sftp session to OpenSSH sshd, and on an ftp session to vsftpd;
 * - with the native clients straight to the same servers: ssh2 `fastGet`/`fastPut`
 *   (chunkSize 261120, the fastest setting measured) and basic-ftp
 *   `downloadTo`/`uploadFrom`.
 * Figures are medians of BENCH_RUNS (3) runs, MB = 10^6 bytes. Needs root (the
 * servers run for a throwaway user, as in the tests), openssh-server, vsftpd, curl.
 *
 *   node --import tsx bench/backend-sftp-ftp.ts
 */
import { randomBytes } from 'node:crypto'
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client as FtpClient } from 'basic-ftp'
import ssh2 from 'ssh2'
import { validateConfig } from '../core/config.js'
import { curl, fakeTest, onCleanup, runCases, runMain, session } from './lib/backend.js'
import { startFilegate } from '../front/app.js'
import { silentLogger } from '../front/log.js'
import { startSshd } from '../test/servers/sshd.js'
import { startVsftpd } from '../test/servers/vsftpd.js'

const MiB = 1024 * 1024
const sizeMb = Number(process.env.BENCH_SIZE_MB ?? 256)
const runs = Number(process.env.BENCH_RUNS ?? 3)
const workers = Number(process.env.BENCH_WORKERS ?? 2)
const size = sizeMb * MiB


async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'filegate-bench-sftp-ftp-'))
  onCleanup(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'big.bin')
  const chunk = randomBytes(MiB)
  writeFileSync(file, Buffer.concat(Array.from({ length: sizeMb }, () => chunk)))

  const sshd = await startSshd(fakeTest)
  const ftpd = await startVsftpd(fakeTest)
  const config = validateConfig({
    port: 0,
    workers,
    data_dir: join(dir, 'data'),
    log: { level: 'error', requests: false },
    sftp: { port: 'off' },
    s3: { port: 'off' },
    connections: [
      { label: 'sftp', type: 'sftp', hostname: '127.0.0.1', port: sshd.port },
      { label: 'ftp', type: 'ftp', hostname: '127.0.0.1', port: ftpd.port },
    ],
  })
  const app = await startFilegate(config, { logger: silentLogger })
  onCleanup(() => app.close(0))
  const url = `http://127.0.0.1:${app.port}`
  const sftpToken = await session(url, { type: 'sftp', username: sshd.username, password: sshd.password })
  const ftpToken = await session(url, { type: 'ftp', username: ftpd.username, password: ftpd.password })

  // Native clients, connected once (as filegate's pooled sessions are).
  const ssh = new ssh2.Client()
  await new Promise<void>((resolve, reject) => {
    ssh.once('ready', () => resolve()).once('error', reject)
    ssh.connect({ host: '127.0.0.1', port: sshd.port, username: sshd.username, password: sshd.password })
  })
  onCleanup(() => ssh.end())
  const sftp = await new Promise<ssh2.SFTPWrapper>((resolve, reject) => ssh.sftp((err, s) => (err ? reject(err) : resolve(s))))
  const ftp = new FtpClient(60_000)
  await ftp.access({ host: '127.0.0.1', port: ftpd.port, user: ftpd.username, password: ftpd.password })
  onCleanup(() => ftp.close())

  const fast = { chunkSize: 261120 }
  const fastGet = (from: string, to: string): Promise<void> => new Promise((resolve, reject) => sftp.fastGet(from, to, fast, (err) => (err ? reject(err) : resolve())))
  const fastPut = (from: string, to: string): Promise<void> => new Promise((resolve, reject) => sftp.fastPut(from, to, fast, (err) => (err ? reject(err) : resolve())))
  const cases: Record<string, () => Promise<unknown>> = {
    'sftp download, filegate HTTP': () => curl(['-o', '/dev/null', '-H', `Authorization: Bearer ${sftpToken}`, `${url}/api/files/cat?path=/big.bin`]),
    'sftp download, ssh2 fastGet': () => fastGet(`${sshd.root}/big.bin`, '/dev/null'),
    'sftp upload, filegate HTTP': () => curl(['-X', 'POST', '-T', file, '-H', 'Expect:', '-H', `Authorization: Bearer ${sftpToken}`, `${url}/api/files/cat?path=/up.bin`]),
    'sftp upload, ssh2 fastPut': () => fastPut(file, `${sshd.root}/up-native.bin`),
    'ftp download, filegate HTTP': () => curl(['-o', '/dev/null', '-H', `Authorization: Bearer ${ftpToken}`, `${url}/api/files/cat?path=/big.bin`]),
    'ftp download, basic-ftp': () => ftp.downloadTo('/dev/null', `${ftpd.root}/big.bin`),
    'ftp upload, filegate HTTP': () => curl(['-X', 'POST', '-T', file, '-H', 'Expect:', '-H', `Authorization: Bearer ${ftpToken}`, `${url}/api/files/cat?path=/up.bin`]),
    'ftp upload, basic-ftp': () => ftp.uploadFrom(createReadStream(file), `${ftpd.root}/up-native.bin`),
  }
  // The file to download, uploaded once through each client (also a warm-up).
  await fastPut(file, `${sshd.root}/big.bin`)
  await ftp.uploadFrom(createReadStream(file), `${ftpd.root}/big.bin`)
  await runCases(cases, size, runs, `${sizeMb} MiB, loopback, ${workers} filegate worker(s)`)
}

runMain(main)
