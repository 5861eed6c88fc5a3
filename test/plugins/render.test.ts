/**
 * plg_image_ascii's pure parts, on hand-made pixels: the grid's geometry, the ramp, the
 * colour codes and the format signatures. And the built-in plugins' two halves agree.
 */
import t from 'tap'
import { BUILT_IN_MAIN_HALVES } from '../../front/plugins.js'
import { BUILT_IN_WORKER_HALVES } from '../../workers/plugins.js'
import { sniff } from '../../workers/plugins/image-input.js'
import { CELL_ASPECT, MAX_ROWS, RAMP, charFor, gridFor, renderAscii } from '../../workers/plugins/plg_image_ascii/render.js'

t.test('the grid: rows from the aspect ratio, corrected for character cells', async (t) => {
  t.equal(CELL_ASPECT, 0.5, 'a cell is about twice as tall as wide')
  t.strictSame(gridFor(200, 100, 80), { cols: 80, rows: 20 }, '2:1 at 80 columns: 20 rows')
  t.strictSame(gridFor(100, 100, 80), { cols: 80, rows: 40 }, 'square: 40 rows')
  t.strictSame(gridFor(100, 200, 80), { cols: 80, rows: 80 }, 'portrait 1:2: 80 rows')
  t.strictSame(gridFor(1000, 1, 80), { cols: 80, rows: 1 }, 'a thin strip: at least one row')
  t.strictSame(gridFor(16, 16, 400), { cols: 400, rows: 200 }, 'a small image is scaled up to the width')
  const tall = gridFor(10, 100_000, 80)
  t.equal(tall.rows, MAX_ROWS, `a very tall image stops at ${MAX_ROWS} rows`)
  t.equal(tall.cols, 1, '...and is narrowed to keep its aspect')
  const tallish = gridFor(100, 2600, 80)
  t.strictSame(tallish, { cols: 77, rows: MAX_ROWS }, 'narrowed just enough')
})

t.test('the ramp: light to dark', async (t) => {
  t.equal(RAMP, ' .,:;i1tfLCG08@')
  t.equal(charFor(255, 255, 255), ' ', 'white: the light end')
  t.equal(charFor(0, 0, 0), '@', 'black: the dark end')
  t.equal(charFor(128, 128, 128), 't', 'mid grey: the middle')
  t.equal(charFor(0, 255, 0), ';', 'green is bright (Rec. 709 luma weights)')
  t.equal(charFor(0, 0, 255), '8', 'blue is dark')
  let last = -1
  for (let v = 0; v <= 255; v += 5) {
    const i = RAMP.indexOf(charFor(255 - v, 255 - v, 255 - v))
    t.ok(i >= last, `darker never gives a lighter character (${255 - v})`)
    last = i
  }
  t.equal(last, RAMP.length - 1, 'the whole ramp is used')
})

t.test('renderAscii: rows of characters; colour codes with a reset per row', async (t) => {
  // 3×2: black, white, red / grey, grey, blue
  const px = Uint8Array.from([0, 0, 0, 255, 255, 255, 255, 0, 0, 128, 128, 128, 128, 128, 128, 0, 0, 255])
  t.equal(renderAscii(px, 3, 2, false), `@ ${charFor(255, 0, 0)}\ntt8\n`)
  const c = renderAscii(px, 3, 2, true)
  t.equal(
    c,
    '\x1b[38;2;0;0;0m@\x1b[38;2;255;255;255m \x1b[38;2;255;0;0m' + charFor(255, 0, 0) + '\x1b[0m\n' + '\x1b[38;2;128;128;128mtt\x1b[38;2;0;0;255m8\x1b[0m\n',
    'a code at each change of colour (not repeated within a run), a reset at each row end',
  )
  t.throws(() => renderAscii(px, 4, 2, false), /bytes for 4x2/, 'too few pixels for the grid: a bug, said')
})

t.test('format signatures', async (t) => {
  const b = (...parts: (string | number[])[]) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))))
  t.equal(sniff(b([0x89], 'PNG\r\n\x1a\n', 'rest')), 'png')
  t.equal(sniff(b([0xff, 0xd8, 0xff, 0xe0], 'JFIF')), 'jpeg')
  t.equal(sniff(b('GIF89a', 'xxxxxx')), 'gif')
  t.equal(sniff(b('GIF87a', 'xxxxxx')), 'gif')
  t.equal(sniff(b('RIFF', [1, 2, 3, 4], 'WEBPVP8 ')), 'webp')
  t.equal(sniff(b('RIFF', [1, 2, 3, 4], 'WAVEfmt ')), null, 'RIFF but not WebP (a WAV file)')
  t.equal(sniff(b('II*\0', 'tiff-data')), null, 'TIFF is not one of the four')
  t.equal(sniff(b('<svg xmlns=')), null, 'SVG is not decoded')
  t.equal(sniff(b('')), null, 'nothing')
})

t.test("each built-in plugin has both halves, under one name", async (t) => {
  t.strictSame([...BUILT_IN_MAIN_HALVES.keys()].sort(), [...BUILT_IN_WORKER_HALVES.keys()].sort(), 'the same names on both sides')
  for (const [name, p] of BUILT_IN_MAIN_HALVES) t.equal(p.name, name, `${name}: main half named so`)
  for (const [name, p] of BUILT_IN_WORKER_HALVES) t.equal(p.name, name, `${name}: worker half named so`)
  const ascii = BUILT_IN_MAIN_HALVES.get('plg_image_ascii')
  t.ok(ascii?.transform?.select && !ascii.transform.open, 'plg_image_ascii main half: selects')
  const worker = BUILT_IN_WORKER_HALVES.get('plg_image_ascii')
  t.ok(worker?.transform?.open && !worker.transform.select, 'plg_image_ascii worker half: renders')
})
