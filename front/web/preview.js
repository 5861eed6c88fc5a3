// Previews in a dialog: images and PDFs from a blob: URL the page makes (the only
// frames and images the CSP allows besides this origin), text as text, and an image
// as ASCII art through the plg_image_ascii plugin (docs/plugins.md) when the server has it.
import { baseName } from './api.js'
import { dialog, el, kindOf } from './ui.js'

/** Text previews read at most this much (a Range request): enough to see what a file is. */
const TEXT_BYTES = 256 * 1024

export function canPreview(entry) {
  return entry.type === 'file' && ['image', 'pdf', 'text'].includes(kindOf(entry))
}

async function fill(api, path, kind, body, ascii) {
  body.replaceChildren(el('p', { class: 'hint' }, 'Loading…'))
  if (ascii) {
    const res = await api.call('GET', '/api/files/cat', { path, ascii: 'true', ascii_width: '100' })
    const type = res.headers.get('content-type') ?? ''
    if (!type.startsWith('text/')) {
      body.replaceChildren(el('p', { class: 'hint' }, 'ASCII previews are not enabled on this server (the plg_image_ascii plugin).'))
      return
    }
    body.replaceChildren(el('pre', { class: 'ascii', 'aria-label': `${baseName(path)} as ASCII art` }, await res.text()))
    return
  }
  if (kind === 'text') {
    const res = await api.call('GET', '/api/files/cat', { path }, { headers: { range: `bytes=0-${TEXT_BYTES - 1}` } })
    const text = await res.text()
    const cut = res.status === 206 ? el('p', { class: 'hint' }, `The first ${TEXT_BYTES / 1024} KiB are shown.`) : null
    body.replaceChildren(el('pre', { tabindex: '0', 'aria-label': `Contents of ${baseName(path)}` }, text), cut)
    return
  }
  const blob = await (await api.call('GET', '/api/files/cat', { path })).blob()
  const url = URL.createObjectURL(blob)
  body.dataset.url = url
  if (kind === 'image') body.replaceChildren(el('img', { src: url, alt: baseName(path) }))
  else {
    // The browser's own PDF viewer in a frame, over a blob: URL this page made from the
    // server's answer (type application/pdf). Not a sandboxed frame: Chromium refuses to run
    // its PDF viewer in one (any sandbox flag blocks it). The viewer runs apart from the page
    // and a PDF's own scripts never reach it; the CSP allows frames of blob: URLs and nothing else.
    body.replaceChildren(el('iframe', { src: url, title: `PDF: ${baseName(path)}` }))
  }
}

/** Opens the preview of a file; `download()` is the page's download of it. */
export async function preview(api, path, entry, download) {
  const kind = kindOf(entry)
  const body = el('div', { class: 'preview-body', 'aria-live': 'polite' })
  const asAscii = kind === 'image' ? el('input', { type: 'checkbox', id: 'preview-ascii' }) : null
  const failed = (err) => body.replaceChildren(el('p', { class: 'error', role: 'alert' }, err.message))
  const show = () => fill(api, path, kind, body, asAscii?.checked).catch(failed)
  const release = () => body.dataset.url && URL.revokeObjectURL(body.dataset.url)
  asAscii?.addEventListener('change', () => (release(), show()))
  const done = dialog({
    title: baseName(path),
    wide: true,
    cancelLabel: 'Close',
    submitLabel: 'Download',
    submit: async () => (await download(), true),
    body: (form) => {
      if (asAscii) form.append(el('label', { class: 'check' }, asAscii, 'Show as ASCII art'))
      form.append(body)
    },
  })
  show()
  await done
  release()
}
