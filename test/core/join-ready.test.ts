/**
 * core/join-ready: a body's small pieces that come in quick succession cross as one chunk; a
 * sender that pauses has its bytes held back a millisecond at most; large pieces go as they are.
 */
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { joinReady } from '../../core/join-ready.js'

const KiB = 1024

async function* pieces(list: Uint8Array[]): AsyncIterable<Uint8Array> {
  for (const p of list) yield p
}

async function collect(body: AsyncIterable<Uint8Array>): Promise<Uint8Array[]> {
  const out: Uint8Array[] = []
  for await (const c of body) out.push(c)
  return out
}

t.test('pieces that are there at once are joined into chunks of up to the size asked, bytes in order', async (t) => {
  const list = Array.from({ length: 40 }, () => randomBytes(64 * KiB))
  const out = await collect(joinReady(pieces(list), 1024 * KiB))
  t.same(out.map((c) => c.byteLength), [1024 * KiB, 1024 * KiB, 512 * KiB], 'sixteen 64 KiB pieces to a chunk')
  t.ok(Buffer.concat(out).equals(Buffer.concat(list)), 'the same bytes')
  t.ok(out.slice(0, 2).every((c) => c.byteOffset === 0 && c.byteLength === c.buffer.byteLength), 'full chunks own their memory (moved across, not copied)')
})

t.test('a large piece that owns its memory goes as it is', async (t) => {
  const big = new Uint8Array(512 * KiB)
  const out = await collect(joinReady(pieces([big]), 1024 * KiB))
  t.equal(out[0], big)
})

t.test('a sender that pauses: what arrived goes on (a millisecond later at most), not held for more', async (t) => {
  let sentSecond = false
  async function* slow(): AsyncIterable<Uint8Array> {
    yield new Uint8Array(10)
    yield new Uint8Array(20)
    await sleep(300)
    sentSecond = true
    yield new Uint8Array(30)
  }
  const it = joinReady(slow(), 1024 * KiB)[Symbol.asyncIterator]()
  const first = await it.next()
  t.equal(first.value?.byteLength, 30, 'the two pieces that were there, joined')
  t.notOk(sentSecond, 'before the sender went on')
  t.equal((await it.next()).value?.byteLength, 30)
  t.ok((await it.next()).done)
})

t.test("the source's failure is the stream's; a consumer that stops stops the source", async (t) => {
  async function* failing(): AsyncIterable<Uint8Array> {
    yield new Uint8Array(10)
    throw new Error('the body failed its check')
  }
  await t.rejects(collect(joinReady(failing())), /failed its check/)
  let stopped = false
  async function* endless(): AsyncIterable<Uint8Array> {
    try {
      for (;;) {
        await sleep(1)
        yield new Uint8Array(10)
      }
    } finally {
      stopped = true
    }
  }
  for await (const c of joinReady(endless())) if (c.byteLength > 0) break
  await sleep(50)
  t.ok(stopped, 'the source was stopped')
})
