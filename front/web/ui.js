// Small DOM helpers shared by the views: elements, icons, formatting, dialogs and messages.

/** An element: `el('button', { type: 'button', onclick }, 'text', child)`. Attributes starting with "on" are listeners. */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue
    if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v)
    else if (k === 'class') e.className = v
    else if (k in e && typeof v !== 'string') e[k] = v
    else e.setAttribute(k, v === true ? '' : v)
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) e.append(c instanceof Node ? c : String(c))
  return e
}

const PATHS = {
  dir: 'M3 6.5A1.5 1.5 0 0 1 4.5 5h4.2l2 2h8.8A1.5 1.5 0 0 1 21 8.5v9A1.5 1.5 0 0 1 19.5 19h-15A1.5 1.5 0 0 1 3 17.5z',
  file: 'M6 3h8l4 4v14H6zM14 3v4h4',
  image: 'M4 5h16v14H4zM4 16l5-5 4 4 3-3 4 4M15.5 9.5a1 1 0 1 0 0-.01',
  text: 'M6 3h8l4 4v14H6zM9 11h6M9 14h6M9 17h4',
  pdf: 'M6 3h8l4 4v14H6zM9 13h2a1.5 1.5 0 0 0 0-3H9v6M14 10v6',
  archive: 'M6 3h12v18H6zM11 3v2h2v2h-2v2h2v2h-2v3h2v3h-2',
}
const KINDS = [
  ['image', /\.(png|jpe?g|gif|webp|avif|svg|bmp|ico)$/i],
  ['pdf', /\.pdf$/i],
  ['archive', /\.(zip|tar|gz|tgz|bz2|xz|7z|rar|zst)$/i],
  ['text', /\.(txt|md|markdown|csv|tsv|json|ya?ml|toml|ini|conf|log|xml|html?|css|m?js|ts|tsx|jsx|py|rb|go|rs|java|c|h|cpp|hpp|sh|sql|env)$/i],
]

/** What kind of file a name is: decides the icon and the preview. */
export function kindOf(entry) {
  if (entry.type === 'directory') return 'dir'
  for (const [k, re] of KINDS) if (re.test(entry.name)) return k
  return 'file'
}

/** An icon, hidden from screen readers: the row says what it is in words. */
export function icon(kind) {
  const ns = 'http://www.w3.org/2000/svg'
  const svg = document.createElementNS(ns, 'svg')
  svg.setAttribute('viewBox', '0 0 24 24')
  svg.setAttribute('class', `icon ${kind}`)
  svg.setAttribute('aria-hidden', 'true')
  svg.setAttribute('focusable', 'false')
  const p = document.createElementNS(ns, 'path')
  p.setAttribute('d', PATHS[kind] ?? PATHS.file)
  p.setAttribute('fill', kind === 'dir' ? 'currentColor' : 'none')
  p.setAttribute('stroke', 'currentColor')
  p.setAttribute('stroke-width', '1.6')
  p.setAttribute('stroke-linejoin', 'round')
  svg.append(p)
  return svg
}

export function formatSize(n) {
  if (n < 1024) return `${n} B`
  const units = ['KiB', 'MiB', 'GiB', 'TiB']
  let v = n / 1024
  let i = 0
  while (v >= 1024 && i < units.length - 1) (v /= 1024), i++
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`
}

export function formatTime(ms) {
  if (!ms) return '—'
  return new Date(ms).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })
}

const flashEl = () => document.getElementById('flash')
const alertEl = () => document.getElementById('alert')
let flashTimer

/** A short confirmation, announced politely. */
export function flash(text) {
  const f = flashEl()
  f.textContent = text
  clearTimeout(flashTimer)
  flashTimer = setTimeout(() => (f.textContent = ''), 6000)
}

/** An error in words, announced at once; stays until the next action. */
export function showError(err) {
  const a = alertEl()
  a.textContent = err?.message ?? String(err)
  a.hidden = false
}

export function clearError() {
  alertEl().hidden = true
  alertEl().textContent = ''
}

/** Runs an action, showing its failure in words instead of throwing. */
export async function attempt(fn) {
  clearError()
  try {
    return await fn()
  } catch (err) {
    if (err?.name === 'AbortError') return undefined
    showError(err)
    return undefined
  }
}

let dialogSeq = 0

/**
 * A modal dialog (the native <dialog>: focus is trapped and Escape closes it).
 * `body(form)` fills it; resolves with what `submit(form)` returns, or null when cancelled.
 * An error thrown by `submit` is shown inside the dialog, which stays open.
 */
export function dialog({ title, body, submitLabel = 'OK', danger = false, submit, cancelLabel = 'Cancel', wide = false }) {
  return new Promise((resolve) => {
    const id = `dlg-${++dialogSeq}`
    const error = el('p', { class: 'error', role: 'alert', hidden: true })
    const ok = el('button', { type: 'submit', class: danger ? 'danger' : '' }, submitLabel)
    const form = el('form', { class: 'stack', novalidate: true })
    const d = el('dialog', { 'aria-labelledby': `${id}-t`, class: wide ? 'preview' : '' }, el('h2', { id: `${id}-t` }, title), form)
    let done = false
    const finish = (v) => {
      if (done) return
      done = true
      d.close()
      d.remove()
      resolve(v)
    }
    body(form)
    const buttons = el('div', { class: 'buttons' })
    if (cancelLabel) buttons.append(el('button', { type: 'button', class: 'ghost', onclick: () => finish(null) }, cancelLabel))
    if (submit) buttons.append(ok)
    form.append(error, buttons)
    form.addEventListener('submit', async (e) => {
      e.preventDefault()
      if (!form.reportValidity()) return
      ok.disabled = true
      error.hidden = true
      try {
        finish(await submit(form))
      } catch (err) {
        error.textContent = err?.message ?? String(err)
        error.hidden = false
      } finally {
        ok.disabled = false
      }
    })
    d.addEventListener('close', () => finish(null))
    document.body.append(d)
    d.showModal()
    const first = form.querySelector('input:not([type=hidden]), select, textarea')
    if (first) first.focus()
  })
}

/** A labelled input inside a dialog or form. */
export function field(label, attrs) {
  const input = el('input', attrs)
  return { label: el('label', {}, label, input), input }
}

/** Saves a blob as a download with this name. */
export function saveBlob(blob, name) {
  const url = URL.createObjectURL(blob)
  const a = el('a', { href: url, download: name, hidden: true })
  document.body.append(a)
  a.click()
  a.remove()
  setTimeout(() => URL.revokeObjectURL(url), 60_000)
}
