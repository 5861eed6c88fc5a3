/**
 * Credit windows over a real MessageChannel: a reader whose consumer stops holds about
 * one chunk and the writer pulls nothing more from its source; a consumer that reads
 * gets a window that grows; readers sharing a byte budget stay within it, and a
 * cancelled stream gives its bytes back.
 */
import { MessageChannel } from 'node:worker_threads'
import t from 'tap'
import { ByteBudget, PortReader, PortWriter } from '../../core/port-stream.js'

const CHUNK = 64 * 1024

/** A source of `n` chunks that counts how many were pulled. */
function source(n: number, size = CHUNK) {
  const s = {
    pulled: 0,
    async *[Symbol.asyncIterator]() {
      for (let i = 0; i < n; i++) {
        s.pulled++
        yield new Uint8Array(size)
      }
    },
  }
  return s
}

/** Lets messages between the two ports go back and forth for a while. */
const settle = async () => {
  for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r))
}

function stream(n: number, budget?: ByteBudget, size = CHUNK) {
  const { port1, port2 } = new MessageChannel()
  const src = source(n, size)
  const writer = new PortWriter(port1)
  const done = writer.pipeFrom(src).catch((err: unknown) => err)
  const reader = new PortReader(port2, budget ? { budget } : {})
  return { src, reader, done }
}

t.test('a consumer that stops holds about one chunk; one that reads gets a growing window', async (t) => {
  const { src, reader, done } = stream(64)
  const it = reader[Symbol.asyncIterator]()
  await it.next()
  await settle()
  t.equal(src.pulled, 1, 'while the consumer holds its first chunk, the writer pulls nothing more')

  // The consumer now reads as fast as it can: the writer's lead over it (chunks pulled
  // and not yet consumed: the window in use) grows past one, never past eight.
  let consumed = 1
  let lead = 0
  for (;;) {
    const r = await it.next()
    if (r.done) break
    consumed++
    lead = Math.max(lead, src.pulled - consumed)
    if (consumed % 4 === 0) await settle()
  }
  t.equal(consumed, 64, 'every chunk arrives')
  t.ok(lead > 2 && lead <= 8, `a reading consumer's window grew, within 8 chunks (largest lead ${lead})`)
  t.equal(await done, undefined, 'the writer ended cleanly')
})

t.test('readers sharing a budget stay within it; a cancelled stream gives its bytes back', async (t) => {
  const budget = new ByteBudget(4 * 1024 * 1024)
  const streams = Array.from({ length: 10 }, () => stream(200, budget))
  const its = streams.map((s) => s.reader[Symbol.asyncIterator]())
  // Each consumer takes one chunk and stops.
  await Promise.all(its.map((it) => it.next()))
  await settle()
  t.ok(budget.used <= budget.limit, `stalled readers hold ${budget.used} bytes, within the budget`)
  t.equal(budget.used, 10 * CHUNK, 'one chunk each')
  // One reads everything while the others stay stalled: it is never refused for good.
  let n = 1
  let most = 0
  for (;;) {
    const r = await its[0]!.next()
    if (r.done) break
    n++
    most = Math.max(most, budget.used)
  }
  t.ok(most <= budget.limit + 1024 * 1024, `within the budget, give or take one credit’s estimate (at most ${most} bytes)`)
  t.equal(n, 200, 'the reading stream completes beside the stalled ones')
  for (const s of streams.slice(1)) s.reader.cancel()
  await settle()
  t.equal(budget.used, 0, 'cancelled streams give every byte back')
  for (const s of streams.slice(1)) t.match(await s.done, { code: 'ECANCELED' }, 'their writers see the cancel')
})

t.test('stalled readers that fill the budget never stop another stream: each may always move one chunk', async (t) => {
  // 8 stalled readers of 1 MiB chunks hold 8 MiB, twice this budget.
  const budget = new ByteBudget(4 * 1024 * 1024)
  const stalled = Array.from({ length: 8 }, () => stream(4, budget, 1024 * 1024))
  const within = <T>(p: Promise<T>) => Promise.race([p.then(() => 'done'), new Promise((r) => setTimeout(() => r('stuck'), 5000))])
  t.equal(await within(Promise.all(stalled.map((s) => s.reader[Symbol.asyncIterator]().next()))), 'done', 'each stalled reader got its first chunk')
  await settle()
  const late = stream(16, budget, 1024 * 1024)
  let n = 0
  const read = (async () => {
    for await (const _ of late.reader) n++
  })()
  t.equal(await within(read), 'done', 'a stream that arrives after the stalled ones is served')
  t.equal(n, 16, 'every chunk of it')
  for (const s of stalled) s.reader.cancel()
  await settle()
  t.equal(budget.used, 0, 'every byte is given back')
})

// The web file manager's thumbnails failed on Node 22 only ("stream failed: DataCloneError:
// Cannot transfer object of unsupported type"): sharp's output Buffer spans its whole
// ArrayBuffer, so the writer transferred it, but that memory belongs to the native addon and
// Node 21+ refuses to transfer it (Node 20 copied it silently). Such a chunk is now copied.
t.test('a chunk whose memory a native addon allocated arrives whole (sharp output)', async (t) => {
  const { default: sharp } = await import('sharp')
  const png = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#c03' } }).png().toBuffer()
  t.equal(png.byteOffset, 0, 'the Buffer spans its whole ArrayBuffer, so the writer tries to transfer it')
  t.equal(png.byteLength, png.buffer.byteLength)
  const expected = Buffer.from(png)
  const { port1, port2 } = new MessageChannel()
  const writer = new PortWriter(port1)
  const done = writer.pipeFrom((async function* () { yield png })()).catch((err: unknown) => err)
  const got: Uint8Array[] = []
  for await (const c of new PortReader(port2)) got.push(c)
  t.equal(await done, undefined, 'the writer finished without an error')
  t.same(Buffer.concat(got), expected, 'the reader got every byte')
})
