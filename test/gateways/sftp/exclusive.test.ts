/**
 * SFTP OPEN with CREAT|EXCL is exclusive at OPEN (issue: ten concurrent openers all got
 * a handle and nine failed only at CLOSE): of ten clients racing for one new name,
 * exactly one gets a handle, the nine others a FAILURE at OPEN; the winner's bytes are
 * what is committed; a creation given up (its connection cut) frees the name.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { BACKENDS, startGateway } from './fixture.js'
import { call, ssh2Sftp } from './clients.js'

const FAILURE = 4

for (const backend of BACKENDS) {
  t.test(`${backend}: ten concurrent exclusive openers, one handle`, async (t) => {
    const { login, root } = await startGateway(t, { backend })
    const clients = await Promise.all(Array.from({ length: 10 }, () => ssh2Sftp(t, login)))
    const outcomes = await Promise.all(
      clients.map(({ sftp }) =>
        call<Buffer>(sftp.open.bind(sftp), 'race.txt', 'wx').then(
          (h) => ({ h, code: 0 }),
          (err: { code: number }) => ({ h: null, code: err.code }),
        ),
      ),
    )
    const winners = outcomes.filter((o) => o.h !== null)
    t.equal(winners.length, 1, 'exactly one handle')
    t.same(outcomes.filter((o) => o.h === null).map((o) => o.code), Array(9).fill(FAILURE), 'nine FAILUREs at OPEN')
    const i = outcomes.findIndex((o) => o.h !== null)
    const { sftp } = clients[i]!
    const mine = Buffer.from(`written by opener ${i}\n`)
    await call(sftp.write.bind(sftp), winners[0]!.h, mine, 0, mine.length, 0)
    await call(sftp.close.bind(sftp), winners[0]!.h)
    t.same(readFileSync(join(root, 'race.txt')), mine, "the winner's bytes are committed")
    await t.rejects(call(clients[(i + 1) % 10]!.sftp.open.bind(clients[(i + 1) % 10]!.sftp), 'race.txt', 'wx'), { code: FAILURE }, 'once it exists, still refused')
  })
}

t.test('a creation given up frees the name', async (t) => {
  const { login, root } = await startGateway(t)
  const first = await ssh2Sftp(t, login)
  await call<Buffer>(first.sftp.open.bind(first.sftp), 'name.txt', 'wx')
  const second = await ssh2Sftp(t, login)
  await t.rejects(call(second.sftp.open.bind(second.sftp), 'name.txt', 'wx'), { code: FAILURE, message: /already exists/ }, 'taken while the first is creating it')
  first.client.on('error', () => {})
  first.client.end()
  let opened: Buffer | null = null
  for (const deadline = Date.now() + 20_000; opened === null && Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    opened = await call<Buffer>(second.sftp.open.bind(second.sftp), 'name.txt', 'wx').catch(() => null)
  }
  t.ok(opened, 'free again once the first connection is gone (nothing was committed)')
  await call(second.sftp.close.bind(second.sftp), opened)
  t.ok(existsSync(join(root, 'name.txt')), 'created by the second')
})
