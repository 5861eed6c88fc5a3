/**
 * @module test/front/web-preview.test
 * Previews in the web file manager: an image (shown from a blob: URL, the only images
 * the CSP allows besides the page's own), a text file (its text, never run as a page:
 * an .html file is shown as text), a PDF in the browser's own viewer in a frame, and
 * an image as ASCII art through the plg_image_ascii plugin, and thumbnails in the listing
 * through plg_image_thumbnail; without the plugins, the ASCII option says it is not
 * enabled and the listing keeps its icons.
 */
import t from 'tap'
import sharp from 'sharp'
import { launchBrowser, noBrowser } from '../helpers/browser.js'
import { api, startTestServer } from '../helpers/filegate.js'
import { row, webLogin } from '../helpers/web.js'

/** A one-page PDF that says "hello", with a correct cross-reference table. */
function tinyPdf(): Buffer {
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 100] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    '<< /Length 35 >>\nstream\nBT /F1 18 Tf 20 40 Td (hello) Tj ET\nendstream',
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ]
  let out = '%PDF-1.4\n'
  const offsets: number[] = []
  objects.forEach((o, i) => {
    offsets.push(out.length)
    out += `${i + 1} 0 obj\n${o}\nendobj\n`
  })
  const xref = out.length
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`
  return Buffer.from(out, 'latin1')
}

async function seed(url: string, token: string) {
  const call = api(url, token)
  const png = await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 200, g: 30, b: 30 } } }).png().toBuffer()
  await call('POST', '/api/files/cat', { path: '/pics/red.png' }, { body: png })
  await call('POST', '/api/files/cat', { path: '/notes.md' }, { body: '# Notes\nline two' })
  await call('POST', '/api/files/cat', { path: '/page.html' }, { body: '<script>document.title="ran"</script><b>bold</b>' })
  await call('POST', '/api/files/cat', { path: '/doc.pdf' }, { body: new Uint8Array(tinyPdf()) })
}

t.test('image, text and PDF previews, and ASCII art', { skip: noBrowser }, async (t) => {
  const { url } = await startTestServer(t, { plugins: ['plg_image_ascii', 'plg_image_thumbnail'] })
  const { page, failed } = await launchBrowser(t)
  await webLogin(page, url, { userID: 'viewer' })
  const token = (await page.evaluate(() => sessionStorage.getItem('filegate-web-token')))!
  await seed(url, token)
  await page.reload()
  await row(page, 'notes.md')

  await page.click('#listing button[data-name="notes.md"]')
  await page.waitForSelector('dialog[open] .preview-body pre')
  t.equal(await page.textContent('dialog[open] .preview-body pre'), '# Notes\nline two', 'the text is shown')
  await page.keyboard.press('Escape')
  await page.waitForSelector('dialog[open]', { state: 'detached' })

  await page.click('#listing button[data-name="page.html"]')
  await page.waitForSelector('dialog[open] .preview-body pre')
  t.match(await page.textContent('dialog[open] .preview-body pre'), /<script>/, 'an HTML file is shown as its text')
  t.not(await page.title(), 'ran', 'and nothing of it runs')
  await page.keyboard.press('Escape')

  await page.click('#listing button[data-name="doc.pdf"]')
  await page.waitForSelector('dialog[open] .preview-body iframe')
  const src = await page.getAttribute('dialog[open] .preview-body iframe', 'src')
  t.match(src, /^blob:/, 'the PDF is framed from a blob: URL')
  const frame = await (await page.$('dialog[open] .preview-body iframe'))!.contentFrame()
  await frame!.waitForLoadState()
  const type = await frame!.evaluate(() => [document.contentType, document.querySelector('embed')?.getAttribute('type')].join(' '))
  t.match(type, /application\/pdf/, `the browser's PDF viewer shows it (${type})`)
  await page.keyboard.press('Escape')

  await page.click('#listing button[data-name="pics"]')
  await row(page, 'red.png')
  // plg_image_thumbnail is on: the icon gives way to a thumbnail made by the server.
  await page.waitForSelector('#listing button[data-name="red.png"] img.thumb')
  const thumb = await page.$eval('#listing button[data-name="red.png"] img.thumb', async (img) => {
    const i = img as HTMLImageElement
    await i.decode()
    return [i.naturalWidth, i.naturalHeight, i.src.slice(0, 5), i.alt]
  })
  t.same(thumb, [64, 48, 'blob:', ''], 'a 64-pixel thumbnail, decorative (the name is beside it)')
  await page.click('#listing button[data-name="red.png"]')
  await page.waitForSelector('dialog[open] .preview-body img')
  const size = await page.$eval('dialog[open] .preview-body img', async (img) => {
    const i = img as HTMLImageElement
    await i.decode()
    return [i.naturalWidth, i.naturalHeight]
  })
  t.same(size, [64, 48], 'the image is shown')
  t.equal(await page.getAttribute('dialog[open] .preview-body img', 'alt'), 'red.png', 'with its name as alternative text')
  await page.check('#preview-ascii')
  await page.waitForSelector('dialog[open] pre.ascii')
  const art = (await page.textContent('dialog[open] pre.ascii'))!
  t.ok(art.split('\n').length > 5 && art.split('\n')[0]!.length >= 50, 'the ASCII art is shown')
  await page.keyboard.press('Escape')
  t.same(failed, [], 'no page errors, nothing refused by the CSP')
})

t.test('without the plugin, the ASCII option says so', { skip: noBrowser }, async (t) => {
  const { url } = await startTestServer(t)
  const { page, failed } = await launchBrowser(t)
  await webLogin(page, url, { userID: 'viewer' })
  const token = (await page.evaluate(() => sessionStorage.getItem('filegate-web-token')))!
  await seed(url, token)
  const probe = page.waitForResponse((r) => r.url().includes('thumbnail='))
  await page.goto(`${url}/#/pics/`)
  await row(page, 'red.png')
  t.equal((await probe).status(), 206, 'the thumbnail probe gets one byte of the image: no plugin')
  t.equal(await page.$('#listing img.thumb'), null, 'so the listing keeps its icons')
  await page.click('#listing button[data-name="red.png"]')
  await page.waitForSelector('dialog[open] .preview-body img')
  await page.check('#preview-ascii')
  await page.waitForSelector('dialog[open] .preview-body .hint:text("not enabled")')
  t.pass('said in words')
  t.same(failed, [], 'no page errors')
})
