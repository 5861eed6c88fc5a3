// Uploads: picked files, dropped files and folders; each to its place under the current
// folder, small ones in one request (POST /api/files/cat), large ones through tus so that
// a cut connection or a reload resumes them. Each has a progress bar with its name.
import { join } from './api.js'
import { tusUpload } from './tus.js'
import { el, formatSize } from './ui.js'

/** Files at least this large go through tus (resumable); smaller ones in one request. */
export const TUS_FROM = 8 * 1024 * 1024

/** One upload in one request, with progress (XMLHttpRequest reports it; fetch does not). */
function simpleUpload(api, file, path, onProgress, overwrite) {
  return new Promise((resolve, reject) => {
    const x = new XMLHttpRequest()
    x.open('POST', api.url('/api/files/cat', { path, ...(overwrite ? {} : { overwrite: 'false' }) }))
    for (const [k, v] of Object.entries(api.headers())) x.setRequestHeader(k, v)
    x.upload.onprogress = (e) => onProgress(e.loaded, file.size)
    x.onload = () => {
      if (x.status === 200) return resolve()
      let msg = `the server answered ${x.status}`
      try {
        msg = JSON.parse(x.responseText).message ?? msg
      } catch {}
      reject(new Error(msg))
    }
    x.onerror = () => reject(new Error('the connection was cut'))
    x.send(file)
  })
}

/** The files of a drop: folders (webkitGetAsEntry) walked, each file with its path relative to the drop. */
export async function droppedFiles(dataTransfer) {
  const entries = [...(dataTransfer.items ?? [])].map((i) => i.webkitGetAsEntry?.()).filter(Boolean)
  if (entries.length === 0) return [...dataTransfer.files].map((f) => ({ file: f, rel: f.name }))
  const out = []
  const walk = async (entry, prefix) => {
    if (entry.isFile) {
      const file = await new Promise((res, rej) => entry.file(res, rej))
      out.push({ file, rel: prefix + entry.name })
    } else if (entry.isDirectory) {
      const reader = entry.createReader()
      // readEntries gives a batch at a time: read until it gives none.
      for (;;) {
        const batch = await new Promise((res, rej) => reader.readEntries(res, rej))
        if (batch.length === 0) break
        for (const e of batch) await walk(e, `${prefix}${entry.name}/`)
      }
    }
  }
  for (const e of entries) await walk(e, '')
  return out
}

/**
 * Uploads `items` ({file, rel}) under `dir`, showing each in `panel`; resolves with the
 * count stored and the failures ({rel, message}).
 */
export async function uploadAll({ api, scope, dir, items, panel, overwrite = true }) {
  const failures = []
  let done = 0
  for (const { file, rel } of items) {
    const path = join(dir, rel)
    const bar = el('progress', { max: Math.max(file.size, 1), value: 0, 'aria-label': `Uploading ${rel}` })
    const state = el('span', { class: 'state' }, formatSize(file.size))
    const row = el('div', { class: 'upload', 'data-path': path }, el('span', {}, rel), state, bar)
    panel.append(row)
    const progress = (sent, total, note) => {
      bar.value = sent
      const pct = total ? Math.floor((sent / total) * 100) : 100
      bar.setAttribute('aria-valuetext', `${pct}%`)
      state.textContent = `${pct}% of ${formatSize(total)}${note ? ` — ${note}` : ''}`
    }
    try {
      if (file.size >= TUS_FROM) await tusUpload({ api, scope, file, path, onProgress: progress })
      else await simpleUpload(api, file, path, progress, overwrite)
      bar.value = bar.max
      state.textContent = 'done'
      done++
      setTimeout(() => row.remove(), 4000)
    } catch (err) {
      state.textContent = `failed: ${err.message}`
      row.classList.add('failed')
      failures.push({ rel, message: err.message })
    }
  }
  return { done, failures }
}
