/**
 * plg_image_ascii through real HTTP (docs/plugins.md): real images of each format,
 * made with sharp here, uploaded to a real server with `plugins: ['plg_image_ascii']`,
 * downloaded with `&ascii`.
 */
import { randomBytes } from 'node:crypto'
import { setTimeout } from 'node:timers/promises'
import sharp from 'sharp'
import t, { type Test } from 'tap'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'
import { RAMP } from '../../workers/plugins/plg_image_ascii/render.js'

type Rgb = { r: number; g: number; b: number }
const BLACK: Rgb = { r: 0, g: 0, b: 0 }
const WHITE: Rgb = { r: 255, g: 255, b: 255 }
const FORMATS = ['png', 'jpeg', 'gif', 'webp'] as const
type Format = (typeof FORMATS)[number]

const encode = (img: ReturnType<typeof sharp>, f: Format) => img[f]().toBuffer()
const solid = (w: number, h: number, c: Rgb, f: Format) => encode(sharp({ create: { width: w, height: h, channels: 3, background: c } }), f)

/** Left half black, right half white. */
function halves(w: number, h: number, f: Format): Promise<Buffer> {
  const raw = Buffer.alloc(w * h * 3, 255)
  for (let y = 0; y < h; y++) raw.fill(0, y * w * 3, (y * w + w / 2) * 3)
  return encode(sharp(raw, { raw: { width: w, height: h, channels: 3 } }), f)
}

/** Two frames: black, then white. */
function twoFrames(w: number, h: number, f: 'gif' | 'webp'): Promise<Buffer> {
  const raw = Buffer.alloc(w * h * 2 * 3, 255)
  raw.fill(0, 0, w * h * 3)
  return encode(sharp(raw, { raw: { width: w, height: h * 2, channels: 3, pageHeight: h } }), f)
}

/** The art's rows; it must end with a newline. */
const lines = (text: string) => {
  if (!text.endsWith('\n')) throw new Error(`the art does not end with a newline: ${JSON.stringify(text.slice(-40))}`)
  return text.slice(0, -1).split('\n')
}
const ESC = '\x1b'

async function setup(t: Test, plugins: unknown[] = ['plg_image_ascii']) {
  const s = await startTestServer(t, { plugins })
  const call = api(s.url, await tmpSession(s.url))
  const put = async (path: string, body: Uint8Array | string) => {
    const res = await call('POST', '/api/files/cat', { path }, { body: typeof body === 'string' ? body : new Uint8Array(body) })
    t.equal(res.status, 200, `uploaded ${path}`)
  }
  const art = async (path: string, query: Record<string, string> = {}) => {
    const res = await call('GET', '/api/files/cat', { path, ascii: '', ...query })
    return { res, text: await res.text() }
  }
  return { s, call, put, art }
}

t.test('each format renders at 80 columns, rows from the aspect ratio corrected for character cells', async (t) => {
  const { put, art } = await setup(t)
  for (const f of FORMATS) {
    // 200×100 at 80 columns: 40 rows of square cells, halved for cells twice as tall as wide.
    await put(`/half.${f}`, await halves(200, 100, f))
    const { res, text } = await art(`/half.${f}`)
    t.equal(res.status, 200, `${f}: 200`)
    t.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8', `${f}: text/plain; charset=utf-8`)
    for (const h of ['content-length', 'etag', 'last-modified', 'accept-ranges']) t.equal(res.headers.get(h), null, `${f}: no ${h} of the original`)
    const rows = lines(text)
    t.equal(rows.length, 20, `${f}: 20 rows`)
    t.ok(
      rows.every((l) => l.length === 80),
      `${f}: every row is 80 columns`,
    )
    t.ok(
      rows.every((l) => /^@+$/.test(l.slice(0, 35)) && /^ +$/.test(l.slice(45))),
      `${f}: the black half is "@", the white half is " " (the picture is where it should be)`,
    )
    t.ok(/^[ .,:;i1tfLCG08@\n]+$/.test(text), `${f}: only ramp characters`)
  }

  // Portrait: 100×200 at 80 columns → 80 rows.
  await put('/tall.png', await solid(100, 200, BLACK, 'png'))
  t.equal(lines((await art('/tall.png')).text).length, 80, 'a portrait image: 80 rows of 80 columns')

  // A phone photo stored sideways: 200×100 pixels with EXIF orientation 6 (turn 90°) shows as 100×200.
  const sideways = await sharp(await halves(200, 100, 'png')).jpeg().withMetadata({ orientation: 6 }).toBuffer()
  await put('/sideways.jpg', sideways)
  const turned = lines((await art('/sideways.jpg')).text)
  t.equal(turned.length, 80, 'EXIF orientation applied: 80 rows, as a portrait')
  t.ok(/^@+$/.test(turned[5]!.trim()) && /^ +$/.test(turned[75]!), 'turned clockwise: the black (left) half is now on top')
})

t.test('a dark image gives the dark end of the ramp, a light image the light end', async (t) => {
  t.equal(RAMP, ' .,:;i1tfLCG08@', 'the ramp, light to dark')
  const { put, art } = await setup(t)
  for (const f of FORMATS) {
    await put(`/dark.${f}`, await solid(120, 60, BLACK, f))
    await put(`/light.${f}`, await solid(120, 60, WHITE, f))
    await put(`/grey.${f}`, await solid(120, 60, { r: 128, g: 128, b: 128 }, f))
    t.ok(/^(@{80}\n)+$/.test((await art(`/dark.${f}`)).text), `${f}: black → all "@"`)
    t.ok(/^( {80}\n)+$/.test((await art(`/light.${f}`)).text), `${f}: white → all " "`)
    const grey = new Set((await art(`/grey.${f}`)).text.replace(/\n/g, ''))
    t.ok(grey.size === 1 && ['t', 'f', '1'].includes([...grey][0]!), `${f}: mid grey → the middle of the ramp (${[...grey].join('')})`)
  }
  // Transparent pixels are paper: light.
  await put('/clear.png', await sharp({ create: { width: 50, height: 50, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } }).png().toBuffer())
  t.ok(/^( {80}\n)+$/.test((await art('/clear.png')).text), 'a transparent image → all " "')
})

t.test('GIF and WebP: the first frame', async (t) => {
  const { put, art } = await setup(t)
  for (const f of ['gif', 'webp'] as const) {
    await put(`/anim.${f}`, await twoFrames(80, 40, f))
    t.ok(/^(@{80}\n){20}$/.test((await art(`/anim.${f}`)).text), `${f}: the black first frame, not the white second`)
  }
})

t.test('ascii_width: 10 to 400 columns; outside is 400 INVALID_INPUT before dispatch', async (t) => {
  const { put, art, s } = await setup(t)
  await put('/w.png', await solid(200, 100, BLACK, 'png'))
  for (const [w, rows] of [
    [10, 3], // 10 × 0.5 × 0.5 = 2.5 → 3
    [40, 10],
    [400, 100],
  ] as const) {
    const r = lines((await art('/w.png', { ascii_width: String(w) })).text)
    t.equal(r.length, rows, `width ${w}: ${rows} rows`)
    t.ok(
      r.every((l) => l.length === w),
      `width ${w}: ${w} columns`,
    )
  }
  // The last download's task ends just after its reply: let it settle before counting.
  for (let i = 0; i < 100 && s.app.pool.stats.running > 0; i++) await setTimeout(10)
  const before = s.app.pool.stats.completed
  for (const bad of ['9', '401', '0', '-20', '80.5', 'abc', '', '1e2', '00000080000']) {
    const { res, text } = await art('/w.png', { ascii_width: bad })
    t.equal(res.status, 400, `ascii_width=${JSON.stringify(bad)}: 400`)
    t.match(JSON.parse(text), { status: 'error', code: 'INVALID_INPUT', message: /ascii_width.*10 to 400/ }, 'the contract envelope, naming the parameter')
    t.equal(s.app.pool.stats.completed, before, 'refused on the main thread: no task reached a worker')
  }
})

t.test('colour codes only with ascii_color=true', async (t) => {
  const { put, art } = await setup(t)
  await put('/red.png', await solid(100, 50, { r: 255, g: 0, b: 0 }, 'png'))
  await put('/half.png', await halves(200, 100, 'png'))

  const plain = (await art('/half.png')).text
  t.notOk(plain.includes(ESC), 'no colour by default')
  t.notOk((await art('/half.png', { ascii_color: 'false' })).text.includes(ESC), 'none with ascii_color=false')

  const red = (await art('/red.png', { ascii_color: 'true' })).text
  const rows = lines(red)
  t.ok(
    rows.every((l) => l.startsWith(`${ESC}[38;2;255;0;0m`) && l.endsWith(`${ESC}[0m`)),
    'every row starts with the 24-bit code of its colour and ends with a reset',
  )
  t.equal(rows[0]!.split(`${ESC}[38;2;`).length - 1, 1, 'one code per run of one colour, not one per character')

  const coloured = (await art('/half.png', { ascii_color: 'true' })).text
  t.ok(coloured.includes(`${ESC}[38;2;0;0;0m`) && coloured.includes(`${ESC}[38;2;255;255;255m`), 'black and white codes')
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI codes
  t.equal(coloured.replace(/\x1b\[[0-9;]*m/g, ''), plain, 'without its codes, the coloured art is the plain art')
  const { res } = await art('/half.png', { ascii_color: 'blue' })
  t.equal(res.status, 400, 'ascii_color=blue: 400')
})

t.test('a file that is not a decodable image: 415 UNSUPPORTED_MEDIA', async (t) => {
  const { put, art } = await setup(t)
  const png = await solid(64, 64, BLACK, 'png')
  const cases: [string, Uint8Array | string][] = [
    ['/notes.txt', 'hello, not an image\n'.repeat(100)],
    ['/fake.png', 'plain text dressed as a png'],
    ['/tiny.png', 'x'], // shorter than any signature
    ['/empty.png', ''],
    ['/broken.png', png.subarray(0, 40)], // a PNG signature, then nothing decodable
    ['/image.tiff', await sharp({ create: { width: 8, height: 8, channels: 3, background: BLACK } }).tiff().toBuffer()], // an image, not one of the four
  ]
  for (const [path, body] of cases) {
    await put(path, body)
    const { res, text } = await art(path)
    t.equal(res.status, 415, `${path}: 415`)
    t.match(JSON.parse(text), { status: 'error', code: 'UNSUPPORTED_MEDIA', message: new RegExp(path.slice(1).replace('.', '\\.')) }, `${path}: the envelope names the file`)
  }
  const { res } = await art('/')
  t.equal(res.status, 400, 'a directory: 400, as without ascii')
  t.equal((await art('/missing.png')).res.status, 404, 'a missing file: 404')
})

t.test('without ascii, or with ascii=false, the download is untouched', async (t) => {
  const { put, call } = await setup(t)
  const png = await halves(200, 100, 'png')
  await put('/p.png', png)
  const plain = await call('GET', '/api/files/cat', { path: '/p.png' })
  const plainBytes = Buffer.from(await plain.arrayBuffer())
  t.same(plainBytes, png, 'plain download: the image')
  const off = await call('GET', '/api/files/cat', { path: '/p.png', ascii: 'false', ascii_width: '9000' })
  t.equal(off.status, 200, 'ascii=false: 200 (and ascii_width is not looked at)')
  t.same(Buffer.from(await off.arrayBuffer()), plainBytes, 'ascii=false: the same bytes')
  for (const h of ['content-type', 'content-length', 'etag', 'last-modified', 'accept-ranges']) {
    t.equal(off.headers.get(h), plain.headers.get(h), `ascii=false: the same ${h}`)
  }
  t.equal(off.headers.get('content-type'), 'image/png', 'image/png')
  const ranged = await call('GET', '/api/files/cat', { path: '/p.png', ascii: 'false' }, { headers: { range: 'bytes=0-7' } })
  t.equal(ranged.status, 206, 'ascii=false: Range still applies')
})

t.test('with ascii: Range and conditional headers are not applied to the art', async (t) => {
  const { put, call } = await setup(t)
  await put('/p.png', await solid(200, 100, BLACK, 'png'))
  const etag = (await call('GET', '/api/files/cat', { path: '/p.png' })).headers.get('etag')!
  const ranged = await call('GET', '/api/files/cat', { path: '/p.png', ascii: '' }, { headers: { range: 'bytes=0-7' } })
  t.equal(ranged.status, 200, 'Range is ignored: 200')
  t.equal((await ranged.text()).length, 81 * 20, 'the whole art')
  const cond = await call('GET', '/api/files/cat', { path: '/p.png', ascii: '' }, { headers: { 'if-none-match': etag } })
  t.equal(cond.status, 200, "the original's ETag does not make the art 304")
  await cond.text()
  const head = await call('HEAD', '/api/files/cat', { path: '/p.png', ascii: '' })
  t.equal(head.status, 200, 'HEAD: 200')
  t.equal(head.headers.get('content-type'), 'text/plain; charset=utf-8', 'HEAD: the art\'s type')
  const named = await call('GET', '/api/files/cat', { path: '/p.png', ascii: '', name: 'p.txt' })
  t.match(named.headers.get('content-disposition'), /attachment; filename="p.txt"/, 'name= still makes an attachment')
  await named.text()
})

t.test('limits: bytes and pixels over the configured caps are 413 TOO_LARGE', async (t) => {
  const { put, art } = await setup(t, [{ name: 'plg_image_ascii', options: { max_input_bytes: 20_000, max_input_pixels: 300 * 300 } }])
  const big = await sharp(randomBytes(200 * 200 * 3), { raw: { width: 200, height: 200, channels: 3 } }).png().toBuffer()
  t.ok(big.length > 20_000, `a noisy PNG of ${big.length} bytes`)
  await put('/big.png', big)
  let r = await art('/big.png')
  t.equal(r.res.status, 413, 'over max_input_bytes: 413')
  t.match(JSON.parse(r.text), { code: 'TOO_LARGE', message: /big\.png is \d+ bytes.*up to 20000 bytes/ }, 'says which limit')

  await put('/wide.png', await solid(400, 300, BLACK, 'png')) // small file, 120,000 pixels
  r = await art('/wide.png')
  t.equal(r.res.status, 413, 'over max_input_pixels: 413')
  t.match(JSON.parse(r.text), { code: 'TOO_LARGE', message: /400×300 pixels.*up to 90000 pixels/ }, 'says which limit')

  await put('/ok.png', await solid(300, 300, BLACK, 'png'))
  t.equal((await art('/ok.png')).res.status, 200, 'at the pixel limit: rendered')
})

t.test('plugin options are checked at start-up', async (t) => {
  await t.rejects(
    startTestServer(t, { plugins: [{ name: 'plg_image_ascii', options: { max_input_bytes: -1 } }] }),
    { message: /plugin "plg_image_ascii" refused to start: option "max_input_bytes" must be a whole number/ },
  )
  await t.rejects(startTestServer(t, { plugins: [{ name: 'plg_image_ascii', options: { width: 80 } }] }), {
    message: /plugin "plg_image_ascii" refused to start: unknown option "width"/,
  })
})

t.test('without the plugin enabled, &ascii is ignored', async (t) => {
  const { put, call } = await setup(t, [])
  const png = await solid(100, 50, BLACK, 'png')
  await put('/p.png', png)
  const res = await call('GET', '/api/files/cat', { path: '/p.png', ascii: '', ascii_width: '9' })
  t.equal(res.status, 200, '200, and ascii_width is not looked at')
  t.equal(res.headers.get('content-type'), 'image/png', 'image/png')
  t.same(Buffer.from(await res.arrayBuffer()), png, 'the image bytes')
})
