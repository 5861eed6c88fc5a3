/**
 * Slow clients must not starve everyone else. With only a public share link, 300
 * connections ask for a file over 64 KiB and read 1 KiB of it every 2 s; 140 uploads
 * send their headers and then a byte every 2 s (slowloris: alive, so the server's idle
 * timeout does not end them, however long the machine takes to set all of them up); meanwhile a logged-in user lists a folder, reads a small
 * file and downloads a 1 MiB one (a streamed transfer of its own). The server (its own
 * process, as deployed) answers every one of that user's requests, and its memory grows
 * by less than 200 MiB. Starved, the user would never be answered: the stalled transfers
 * never end. How fast the answers come depends on how busy the machine is, so the
 * latencies are printed here and measured by bench/slow-clients.ts (idle against attack).
 *
 * First as the attack was seen, from one address (downloads) and another (uploads),
 * with the default settings: the limits per address answer the excess with 429. Then
 * with those limits raised, from many addresses, so that every stalled connection
 * becomes a live transfer: what holds the line then is that transfers are actors
 * outside the task slots, with bounded, demand-grown stream windows. The limits
 * themselves are checked last.
 */
import type { ChildProcess } from 'node:child_process'
import { mkdtemp, rm, truncate } from 'node:fs/promises'
import http from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'
import { createShare, expectError } from '../helpers/share.js'
import { runSlowClients } from '../helpers/slow-clients.js'
import { spawnFilegate } from '../helpers/spawn-filegate.js'

// Two servers under 440 connections each: minutes on a busy machine.
t.setTimeout(300_000)

async function startServer(env: Record<string, string>): Promise<{ url: string; child: ChildProcess; dataDir: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'filegate-slow-'))
  const { url, child } = await spawnFilegate({ dataDir, workers: 2, env })
  return { url, child, dataDir }
}

async function attack(t: Test, env: Record<string, string>, addresses: number) {
  const { url, child, dataDir } = await startServer(env)
  t.teardown(async () => {
    child.kill('SIGKILL')
    await rm(dataDir, { recursive: true, force: true })
  })
  // The time limits are guards against a hang: the attack's set-up and the user's requests
  // take longer on a busy machine, without anything being wrong.
  const r = await runSlowClients({ url, pid: child.pid!, downloads: 300, uploads: 140, addresses, seconds: 4, requestTimeoutMs: 30_000, settleMs: 60_000 })
  t.comment(JSON.stringify(r))
  t.ok(r.requests > 0, `the logged-in user's requests were answered during the attack (${r.requests}; p50 ${r.p50Ms.toFixed(1)} ms, p99 ${r.p99Ms.toFixed(0)} ms)`)
  t.equal(r.failures, 0, 'every request of the logged-in user succeeded')
  return r
}

t.test('a stalled-client attack with the default settings', async (t) => {
  const r = await attack(t, {}, 1)
  t.ok(r.rssGrowthMiB < 200, `the server's memory grows by less than 200 MiB (${r.rssGrowthMiB.toFixed(0)} MiB)`)
  t.equal(r.downloadStatus['200'], 32, 'the attacker’s address gets its 32 transfers')
  t.equal(r.downloadStatus['429'], 268, 'the rest are refused at once with 429')
  t.equal(r.uploadStatus['429'], 108, 'so are the uploads beyond 32 from the other address')
  t.equal(r.serverTransfers, 64, 'the server holds 32 stalled downloads and 32 stalled uploads')
})

t.test('440 stalled transfers, all admitted, do not starve a logged-in user', async (t) => {
  const r = await attack(t, { FILEGATE_TRANSFERS_PER_ADDRESS: '10000', FILEGATE_TRANSFERS_PER_CREDENTIAL: '10000' }, 10)
  t.equal(r.downloadStatus['200'], 300, 'every stalled download got its 200 head')
  t.same(r.uploadStatus, { none: 140 }, 'no stalled upload was refused or dropped')
  t.equal(r.serverTransfers, 440, 'the server holds the 440 stalled transfers at once')
})

/** A download the client holds paused after its first bytes. */
function heldDownload(url: string, query: string, localAddress = '127.0.0.1', headers: Record<string, string> = {}): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    http
      .get(`${url}/api/files/cat?${query}`, { localAddress, headers }, (res) => {
        if (res.statusCode !== 200) return resolve(res)
        res.once('data', () => {
          res.pause()
          resolve(res)
        })
      })
      .on('error', reject)
  })
}

async function body(res: http.IncomingMessage): Promise<Record<string, unknown>> {
  let text = ''
  for await (const c of res) text += String(c)
  return JSON.parse(text) as Record<string, unknown>
}

t.test('concurrent transfers are limited per address and per credential: 429 beyond', async (t) => {
  const { url, dataDir } = await startTestServer(t, { workers: 2, transfers_per_address: 2, transfers_per_credential: 3 })
  const token = await tmpSession(url, 'limits')
  const call = api(url, token)
  // Far more than the socket buffers of a paused client absorb (several MiB on loopback,
  // more on Node 22), so a held download stays live: a sparse file of 256 MiB.
  await call('POST', '/api/files/touch', { path: '/big.bin' })
  await truncate(join(dataDir, 'tmp', 'limits', 'big.bin'), 256 * 1024 * 1024)
  await call('POST', '/api/files/cat', { path: '/small.txt' }, { body: 'small' })
  const share = await createShare(url, token, { path: '/big.bin' })
  const q = `share=${share.id}&path=/big.bin`

  const a = await heldDownload(url, q, '127.0.2.1')
  const b = await heldDownload(url, q, '127.0.2.1')
  t.equal([a.statusCode, b.statusCode].join(), '200,200', 'two transfers from one address run')
  const third = await heldDownload(url, q, '127.0.2.1')
  t.equal(third.statusCode, 429, 'a third from the same address: 429')
  t.match(await body(third), { status: 'error', code: 'RATE_LIMITED', message: /address/ }, 'the contract envelope, naming the limit')
  t.equal((await call('GET', '/api/files/cat', { path: '/small.txt' })).status, 200, 'a small read is no transfer: still served')

  const c = await heldDownload(url, q, '127.0.2.2')
  t.equal(c.statusCode, 200, 'another address: the share’s third transfer runs')
  const d = await heldDownload(url, q, '127.0.2.3')
  t.equal(d.statusCode, 429, 'the share’s fourth, from a third address: 429')
  t.match(await body(d), { code: 'RATE_LIMITED', message: /credential/ })
  const up = await fetch(`${url}/api/files/cat?${new URLSearchParams({ share: share.id, path: '/x.bin' })}`, { method: 'POST', body: 'x' })
  await expectError(t, up, 403, 'FORBIDDEN', 'limits come after rights: a read-only share still refuses uploads')

  a.destroy()
  // Once the server has seen the client leave, the address has room again.
  let again: http.IncomingMessage | null = null
  for (let i = 0; i < 100; i++) {
    again = await heldDownload(url, q, '127.0.2.1')
    if (again.statusCode === 200) break
    await body(again)
    await new Promise((r) => setTimeout(r, 50))
  }
  t.equal(again!.statusCode, 200, 'after one ends, the address may start another')
  for (const r of [b, c, again!]) r.destroy()
})
