/**
 * plg_image_thumbnail (docs/plugins.md): through real HTTP, a real image of each format
 * comes back as a WebP no larger than asked, turned upright, never enlarged; bad sizes
 * are 400, a text file 415, an image over the limit 413. The worker half on its own:
 * the same bytes asked twice are decoded once (the cache), under any path; other
 * bytes, or another size, are decoded again.
 */
import sharp from 'sharp'
import t from 'tap'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'
import { imageThumbnail, made } from '../../workers/plugins/plg_image_thumbnail/index.js'
import type { TransformInput } from '../../core/plugin.js'

const image = (w: number, h: number, f: 'png' | 'jpeg' | 'gif' | 'webp', r = 10) => sharp({ create: { width: w, height: h, channels: 3, background: { r, g: 120, b: 200 } } })[f]().toBuffer()

t.test('through HTTP', async (t) => {
  const { url } = await startTestServer(t, { plugins: [{ name: 'plg_image_thumbnail', options: { max_input_pixels: 4_000_000 } }] })
  const call = api(url, await tmpSession(url))
  for (const f of ['png', 'jpeg', 'gif', 'webp'] as const) {
    await call('POST', '/api/files/cat', { path: `/big.${f}` }, { body: new Uint8Array(await image(800, 400, f)) })
    const res = await call('GET', '/api/files/cat', { path: `/big.${f}`, thumbnail: '100' })
    t.equal(res.status, 200, `${f}: 200`)
    t.equal(res.headers.get('content-type'), 'image/webp', `${f}: a WebP`)
    const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata()
    t.same([meta.format, meta.width, meta.height], ['webp', 100, 50], `${f}: 100 pixels on its longer side, the same shape`)
  }
  await call('POST', '/api/files/cat', { path: '/small.png' }, { body: new Uint8Array(await image(20, 10, 'png')) })
  const small = await sharp(Buffer.from(await (await call('GET', '/api/files/cat', { path: '/small.png', thumbnail: '' })).arrayBuffer())).metadata()
  t.same([small.width, small.height], [20, 10], 'never enlarged')
  for (const bad of ['8', '513', 'big', '-1']) {
    const res = await call('GET', '/api/files/cat', { path: '/small.png', thumbnail: bad })
    t.equal(res.status, 400, `thumbnail=${bad}: 400`)
    await res.arrayBuffer()
  }
  await call('POST', '/api/files/cat', { path: '/a.txt' }, { body: 'not an image' })
  const text = await call('GET', '/api/files/cat', { path: '/a.txt', thumbnail: '64' })
  t.equal(text.status, 415, 'a text file: 415')
  await text.arrayBuffer()
  await call('POST', '/api/files/cat', { path: '/huge.png' }, { body: new Uint8Array(await image(3000, 2000, 'png')) })
  const huge = await call('GET', '/api/files/cat', { path: '/huge.png', thumbnail: '64' })
  t.equal(huge.status, 413, 'over max_input_pixels: 413')
  await huge.arrayBuffer()
  const plain = await call('GET', '/api/files/cat', { path: '/small.png', thumbnail: 'false' })
  t.equal(plain.headers.get('content-type'), 'image/png', 'thumbnail=false: the file itself')
  await plain.arrayBuffer()
})

t.test('the worker half decodes the same bytes once', async (t) => {
  const params = { size: 64, max_bytes: 1 << 24, max_pixels: 1e8, cache_bytes: 1 << 20 }
  const run = async (bytes: Buffer, path: string, size = 64) => {
    const input: TransformInput = {
      params: { ...params, size },
      options: {},
      file: { path, name: path.slice(1), type: 'image/png', size: bytes.length, mtimeMs: null },
      body: (async function* () {
        yield bytes
      })(),
      signal: new AbortController().signal,
    }
    const out = await imageThumbnail.transform!.open!(input)
    const chunks: Uint8Array[] = []
    for await (const c of out.body) chunks.push(c)
    return Buffer.concat(chunks)
  }
  const a = await image(300, 300, 'png', 1)
  const before = made.count
  const first = await run(a, '/one.png')
  t.equal(made.count, before + 1, 'made once')
  const again = await run(a, '/elsewhere/two.png')
  t.equal(made.count, before + 1, 'the same bytes under another path: from the cache')
  t.same(again, first, 'the same thumbnail')
  await run(await image(300, 300, 'png', 200), '/one.png')
  t.equal(made.count, before + 2, 'other bytes under the same path: made again')
  await run(a, '/one.png', 128)
  t.equal(made.count, before + 3, 'another size: made again')
})
