// The file browser: breadcrumbs, a sortable listing, selection and the actions the
// caller's permissions allow (the listing's `permissions`, docs/api.md). The same view
// serves a logged-in session and a share page; only the credential and the title differ.
import { baseName, join, parentOf } from './api.js'
import { canPreview, preview } from './preview.js'
import { createShare } from './share-dialog.js'
import { showThumbnails } from './thumbs.js'
import { pendingUploads, forgetUpload } from './tus.js'
import { attempt, clearError, dialog, el, field, flash, formatSize, formatTime, icon, kindOf, saveBlob, showError } from './ui.js'
import { droppedFiles, uploadAll } from './uploads.js'

const KIND_WORDS = { dir: 'Folder', image: 'Image', pdf: 'PDF', text: 'Text', archive: 'Archive', file: 'File' }

/** The folder in the address (`#/docs/`), so that reload and Back keep it. */
function folderFromHash() {
  const h = decodeURIComponent(location.hash.replace(/^#/, ''))
  return h.startsWith('/') ? (h.endsWith('/') ? h : `${h}/`) : '/'
}

/**
 * Mounts the browser into `root`. `opts`: `api` (the credential's client), `scope`
 * (what names this credential for unfinished uploads), `share` (true on a share page:
 * downloads may be plain links and no share is made from it), `onLogout`.
 */
export function mountBrowser(root, opts) {
  const { api, scope } = opts
  const state = { cwd: folderFromHash(), entries: [], permissions: {}, sort: { key: 'name', asc: true }, selected: new Set(), loading: false }

  const heading = el('h2', { tabindex: '-1', id: 'listing-title' })
  const crumbs = el('nav', { class: 'crumbs', 'aria-label': 'Folder path' })
  const toolbar = el('div', { class: 'toolbar', role: 'toolbar', 'aria-label': 'Actions' })
  const resumes = el('div', { class: 'resumes' })
  const uploads = el('div', { class: 'uploads', 'aria-label': 'Uploads', role: 'region' })
  const results = el('section', { class: 'card results', hidden: true, 'aria-label': 'Search results' })
  const table = el('table', { id: 'listing', 'aria-labelledby': 'listing-title' })
  const status = el('p', { class: 'hint', id: 'selection-status', 'aria-live': 'polite' })
  const pickFiles = el('input', { type: 'file', multiple: true, hidden: true, id: 'pick-files', onchange: () => uploadPicked(pickFiles) })
  const pickFolder = el('input', { type: 'file', multiple: true, hidden: true, id: 'pick-folder', webkitdirectory: true, onchange: () => uploadPicked(pickFolder) })
  const card = el('section', { class: 'card drop', id: 'files' }, heading, crumbs, toolbar, resumes, uploads, status, table, pickFiles, pickFolder)
  root.replaceChildren(results, card)

  const p = (right) => state.permissions[right] === true
  const selectedEntries = () => state.entries.filter((e) => state.selected.has(e.name))

  // ---------- loading and navigation ----------

  async function load(focus = false) {
    state.loading = true
    const json = await attempt(() => api.ls(state.cwd))
    state.loading = false
    if (!json) {
      state.entries = []
      renderAll()
      return
    }
    state.entries = json.results
    state.permissions = json.permissions
    for (const n of [...state.selected]) if (!state.entries.some((e) => e.name === n)) state.selected.delete(n)
    renderAll()
    if (focus) heading.focus()
    document.dispatchEvent(new CustomEvent('filegate:listed', { detail: { path: state.cwd, count: state.entries.length } }))
  }

  function go(path, focus = true) {
    state.cwd = path.endsWith('/') ? path : `${path}/`
    state.selected.clear()
    clearError()
    const hash = `#${encodeURI(state.cwd)}`
    if (location.hash !== hash) history.pushState(null, '', hash)
    load(focus)
  }
  window.addEventListener('popstate', () => {
    state.cwd = folderFromHash()
    state.selected.clear()
    load(true)
  })

  // ---------- rendering ----------

  function renderAll() {
    heading.textContent = state.cwd === '/' ? (opts.title ?? 'Files') : `${opts.title ?? 'Files'}: ${baseName(state.cwd)}`
    document.title = `${state.cwd} — filegate`
    renderCrumbs()
    renderToolbar()
    renderResumes()
    renderTable()
  }

  function renderCrumbs() {
    const parts = state.cwd.split('/').filter(Boolean)
    const items = [{ name: opts.rootName ?? 'Home', path: '/' }, ...parts.map((n, i) => ({ name: n, path: `/${parts.slice(0, i + 1).join('/')}/` }))]
    crumbs.replaceChildren(
      el(
        'ol',
        {},
        items.map((it, i) =>
          el('li', {}, i === items.length - 1 ? el('span', { 'aria-current': 'page', class: 'link' }, it.name) : el('button', { type: 'button', class: 'link', onclick: () => go(it.path) }, it.name)),
        ),
      ),
    )
  }

  function button(label, onclick, attrs = {}) {
    return el('button', { type: 'button', class: 'ghost', onclick, ...attrs }, label)
  }

  function renderToolbar() {
    const sel = selectedEntries()
    const one = sel.length === 1 ? sel[0] : null
    const items = []
    if (p('can_upload')) {
      items.push(button('Upload files', () => pickFiles.click(), { id: 'upload-files' }))
      items.push(button('Upload folder', () => pickFolder.click(), { id: 'upload-folder' }))
    }
    if (p('can_create_directory')) items.push(button('New folder', newFolder, { id: 'new-folder' }))
    if (p('can_create_file')) items.push(button('New file', newFile, { id: 'new-file' }))
    if (p('can_read')) {
      if (one?.type === 'file') items.push(button('Download', () => download(join(state.cwd, one.name)), { id: 'download' }))
      items.push(button(sel.length ? 'Download as zip' : 'Download all as zip', zip, { id: 'zip' }))
    }
    if (one && p('can_rename')) items.push(button('Rename', () => rename(one), { id: 'rename' }))
    if (sel.length && p('can_move')) items.push(button('Move', () => move(sel), { id: 'move' }))
    if (sel.length && p('can_delete')) items.push(button('Delete', () => remove(sel), { id: 'delete' }))
    if (!opts.share && p('can_share') && sel.length <= 1) items.push(button(one ? 'Share' : 'Share this folder', () => share(one), { id: 'share' }))
    items.push(el('span', { class: 'sep' }))
    if (p('can_read')) {
      const q = el('input', { type: 'search', id: 'search', name: 'q', placeholder: 'Name contains…', 'aria-label': 'Search by name in this folder and below' })
      items.push(el('form', { role: 'search', onsubmit: (e) => (e.preventDefault(), search(q.value)) }, q, el('button', { type: 'submit', class: 'ghost' }, 'Search')))
    }
    toolbar.replaceChildren(...items)
    status.textContent = sel.length ? `${sel.length} selected` : ''
  }

  function renderResumes() {
    const pending = pendingUploads(scope)
    resumes.replaceChildren(
      ...pending.map((u) =>
        el(
          'p',
          { class: 'hint resume' },
          `Unfinished upload: ${u.path} (${Math.floor((u.offset / Math.max(u.size, 1)) * 100)}% of ${formatSize(u.size)}). Upload the same file to the same folder again to resume it. `,
          el('button', { type: 'button', class: 'link', onclick: () => (forgetUpload(u.key), renderResumes()) }, 'Forget it'),
        ),
      ),
    )
  }

  function sorted() {
    const { key, asc } = state.sort
    const cmp = (a, b) => {
      if (a.type !== b.type) return a.type === 'directory' ? -1 : 1
      const v = key === 'name' ? a.name.localeCompare(b.name, undefined, { numeric: true, sensitivity: 'base' }) : (a[key] ?? 0) - (b[key] ?? 0)
      return asc ? v : -v
    }
    return [...state.entries].sort(cmp)
  }

  function header(label, key, cls) {
    const active = state.sort.key === key
    const sort = active ? (state.sort.asc ? 'ascending' : 'descending') : 'none'
    return el(
      'th',
      { scope: 'col', class: cls, 'aria-sort': sort },
      el(
        'button',
        {
          type: 'button',
          'data-sort': key,
          onclick: () => {
            state.sort = { key, asc: active ? !state.sort.asc : true }
            renderTable()
            table.querySelector(`th [data-sort=${key}]`)?.focus()
          },
        },
        label,
        active ? (state.sort.asc ? ' ▲' : ' ▼') : '',
      ),
    )
  }

  function renderTable() {
    const rows = sorted()
    const all = el('input', {
      type: 'checkbox',
      id: 'select-all',
      'aria-label': 'Select all',
      checked: rows.length > 0 && state.selected.size === rows.length,
      onchange: (e) => {
        state.selected = e.target.checked ? new Set(rows.map((r) => r.name)) : new Set()
        renderTable()
        renderToolbar()
        table.querySelector('#select-all')?.focus()
      },
    })
    const head = el('thead', {}, el('tr', {}, el('th', { class: 'pick', scope: 'col' }, all), header('Name', 'name'), header('Size', 'size', 'num'), header('Modified', 'time', 'when')))
    const body = el('tbody')
    if (rows.length === 0) body.append(el('tr', {}, el('td', { colspan: '4', class: 'empty' }, state.loading ? 'Loading…' : p('can_upload') ? 'This folder is empty. Drop files here to upload them.' : 'This folder is empty.')))
    const images = []
    for (const e of rows) {
      const kind = kindOf(e)
      const path = join(state.cwd, e.name)
      const checked = state.selected.has(e.name)
      const pick = el('input', {
        type: 'checkbox',
        'aria-label': `Select ${e.name}`,
        checked,
        onchange: (ev) => {
          if (ev.target.checked) state.selected.add(e.name)
          else state.selected.delete(e.name)
          ev.target.closest('tr').classList.toggle('selected', ev.target.checked)
          renderToolbar()
        },
      })
      const open = () => {
        if (e.type === 'directory') return go(`${path}/`)
        if (canPreview(e)) return preview(api, path, e, () => download(path)).catch(showError)
        return download(path)
      }
      const sign = icon(kind)
      if (kind === 'image' && p('can_read')) images.push({ path, entry: e, icon: sign })
      const name = el('button', { type: 'button', class: 'link', onclick: open, 'data-name': e.name, 'aria-label': `${e.name}, ${KIND_WORDS[kind]}` }, sign, el('span', {}, e.name))
      const tr = el(
          'tr',
          { class: checked ? 'selected' : '', 'data-type': e.type, draggable: p('can_move') ? 'true' : null },
          el('td', { class: 'pick' }, pick),
          el('td', { class: 'name' }, name),
          el('td', { class: 'num' }, e.type === 'directory' ? '—' : formatSize(e.size)),
          el('td', { class: 'when' }, formatTime(e.time)),
        )
      if (p('can_move')) dragMove(tr, e)
      body.append(tr)
    }
    table.replaceChildren(el('caption', { class: 'hint', hidden: true }, `Contents of ${state.cwd}`), head, body)
    showThumbnails(api, images.slice(0, 200))
  }

  // ---------- moving by drag and drop onto a folder ----------

  const DRAG_TYPE = 'application/x-filegate-names'

  /** A row can be dragged (with the rest of the selection, if it is selected) onto a folder's row. */
  function dragMove(tr, entry) {
    tr.addEventListener('dragstart', (ev) => {
      const names = state.selected.has(entry.name) ? [...state.selected] : [entry.name]
      ev.dataTransfer.setData(DRAG_TYPE, JSON.stringify(names))
      ev.dataTransfer.effectAllowed = 'move'
    })
    if (entry.type !== 'directory') return
    const ours = (ev) => ev.dataTransfer.types.includes(DRAG_TYPE)
    tr.addEventListener('dragover', (ev) => {
      if (!ours(ev)) return
      ev.preventDefault()
      ev.stopPropagation()
      tr.classList.add('target')
    })
    tr.addEventListener('dragleave', () => tr.classList.remove('target'))
    tr.addEventListener('drop', async (ev) => {
      if (!ours(ev)) return
      ev.preventDefault()
      ev.stopPropagation()
      tr.classList.remove('target')
      const names = JSON.parse(ev.dataTransfer.getData(DRAG_TYPE)).filter((n) => n !== entry.name)
      if (!names.length) return
      const target = `${join(state.cwd, entry.name)}/`
      const ok = await attempt(async () => {
        for (const n of names) await api.mv(join(state.cwd, n), join(target, n))
        return true
      })
      if (ok) flash(`Moved to ${target}`)
      state.selected.clear()
      await load()
    })
  }

  // ---------- actions ----------

  async function uploadPicked(input) {
    const items = [...input.files].map((f) => ({ file: f, rel: f.webkitRelativePath || f.name }))
    input.value = ''
    await upload(items)
  }

  async function upload(items) {
    if (!items.length) return
    clearError()
    renderResumes()
    const { done, failures } = await uploadAll({ api, scope, dir: state.cwd, items, panel: uploads, overwrite: true })
    if (failures.length) showError(new Error(`${failures.length} upload${failures.length > 1 ? 's' : ''} failed: ${failures.map((f) => `${f.rel} (${f.message})`).join('; ')}`))
    if (done) flash(`${done} file${done > 1 ? 's' : ''} uploaded`)
    await load()
  }

  const filesDragged = (e) => [...(e.dataTransfer?.types ?? [])].includes('Files')
  card.addEventListener('dragover', (e) => {
    if (!filesDragged(e)) return
    // Taken even where uploading is not allowed: the drop is then refused in words
    // instead of the browser leaving the page to open the file.
    e.preventDefault()
    if (p('can_upload')) card.classList.add('over')
  })
  card.addEventListener('dragleave', (e) => {
    if (e.target === card) card.classList.remove('over')
  })
  card.addEventListener('drop', async (e) => {
    if (!filesDragged(e)) return
    e.preventDefault()
    if (!p('can_upload')) return showError(new Error('You can only read here: uploading files is not allowed.'))
    card.classList.remove('over')
    await upload(await droppedFiles(e.dataTransfer))
  })

  const validName = (name) => {
    if (!name || name === '.' || name === '..' || name.includes('/')) throw new Error('A name cannot be empty, "." or "..", nor contain "/".')
    return name
  }

  async function askName(title, submitLabel, value, action) {
    const f = field('Name', { type: 'text', required: true, value: value ?? '', autocomplete: 'off', id: 'name-input' })
    return dialog({
      title,
      submitLabel,
      body: (form) => form.append(f.label),
      submit: async () => (await action(validName(f.input.value.trim())), true),
    })
  }

  async function newFolder() {
    if (await askName('New folder', 'Create', '', (n) => api.mkdir(join(state.cwd, n)))) {
      flash('Folder created')
      await load()
    }
  }

  async function newFile() {
    if (
      await askName('New empty file', 'Create', '', async (n) => {
        if (state.entries.some((e) => e.name === n)) throw new Error(`"${n}" is already here.`)
        await api.touch(join(state.cwd, n))
      })
    ) {
      flash('File created')
      await load()
    }
  }

  async function rename(entry) {
    if (await askName(`Rename ${entry.name}`, 'Rename', entry.name, (n) => (n === entry.name ? undefined : api.mv(join(state.cwd, entry.name), join(state.cwd, n))))) {
      state.selected.clear()
      flash('Renamed')
      await load()
    }
  }

  async function move(entries) {
    let target = state.cwd
    const where = el('p', { id: 'move-target' })
    const list = el('ul', { class: 'folders', 'aria-label': 'Folders' })
    const show = async () => {
      where.textContent = `Move to: ${target}`
      list.replaceChildren(el('li', {}, el('span', { class: 'hint' }, 'Loading…')))
      const json = await api.ls(target).catch((err) => (list.replaceChildren(el('li', { class: 'error' }, err.message)), null))
      if (!json) return
      const up = target === '/' ? [] : [el('li', {}, el('button', { type: 'button', class: 'ghost', onclick: () => ((target = parentOf(target)), show()) }, '↑ Up one folder'))]
      const dirs = json.results.filter((e) => e.type === 'directory' && !(target === state.cwd && entries.some((x) => x.name === e.name)))
      list.replaceChildren(...up, ...dirs.map((d) => el('li', {}, el('button', { type: 'button', class: 'ghost', 'data-folder': d.name, onclick: () => ((target = `${join(target, d.name)}/`), show()) }, icon('dir'), ` ${d.name}`))))
    }
    const moved = dialog({
      title: entries.length === 1 ? `Move ${entries[0].name}` : `Move ${entries.length} items`,
      submitLabel: 'Move here',
      body: (form) => form.append(where, list),
      submit: async () => {
        if (target === state.cwd) throw new Error('They are already in this folder: open another one.')
        for (const e of entries) await api.mv(join(state.cwd, e.name), join(target, e.name))
        return true
      },
    })
    show()
    if (await moved) {
      state.selected.clear()
      flash(`Moved to ${target}`)
      await load()
    }
  }

  async function remove(entries) {
    const names = entries.map((e) => e.name)
    const ok = await dialog({
      title: entries.length === 1 ? `Delete ${names[0]}?` : `Delete ${entries.length} items?`,
      submitLabel: 'Delete',
      danger: true,
      body: (form) =>
        form.append(
          el('p', {}, entries.some((e) => e.type === 'directory') ? 'Folders are deleted with everything in them. This cannot be undone.' : 'This cannot be undone.'),
          el('ul', {}, names.map((n) => el('li', {}, n))),
        ),
      submit: async () => {
        for (const e of entries) await api.rm(join(state.cwd, e.name))
        return true
      },
    })
    if (ok) {
      state.selected.clear()
      flash(entries.length === 1 ? 'Deleted' : `${entries.length} items deleted`)
      await load()
    }
  }

  /** A download: a plain link when the browser can follow it with its credential (a share without password), else fetched and saved. */
  async function fetchOrFollow(endpoint, query, name) {
    if (opts.share && !api.cred.password) {
      const a = el('a', { href: api.url(endpoint, query), download: name, hidden: true })
      document.body.append(a)
      a.click()
      a.remove()
      return
    }
    const res = await api.call('GET', endpoint, query)
    saveBlob(await res.blob(), name)
  }

  function download(path) {
    return attempt(() => fetchOrFollow('/api/files/cat', { path, name: '' }, baseName(path)))
  }

  function zip() {
    const sel = selectedEntries()
    const paths = sel.length ? sel.map((e) => join(state.cwd, e.name) + (e.type === 'directory' ? '/' : '')) : [state.cwd]
    const name = sel.length === 1 ? `${sel[0].name}.zip` : sel.length ? 'download.zip' : `${baseName(state.cwd) || opts.zipName || 'files'}.zip`
    return attempt(() => fetchOrFollow('/api/files/zip', { path: paths }, name))
  }

  async function share(entry) {
    const path = entry ? join(state.cwd, entry.name) + (entry.type === 'directory' ? '/' : '') : state.cwd
    await createShare(api, path)
  }

  async function search(q) {
    const needle = q.trim().toLowerCase()
    if (!needle) {
      results.hidden = true
      return
    }
    results.hidden = false
    const list = el('ul')
    const summary = el('p', { 'aria-live': 'polite' }, 'Searching…')
    results.replaceChildren(el('h2', {}, `Names containing “${q.trim()}” under ${state.cwd}`), summary, list, button('Close the results', () => (results.hidden = true), { id: 'close-results' }))
    // No search endpoint: walk the folders breadth-first, bounded, through ls.
    const MAX_FOLDERS = 500
    const queue = [state.cwd]
    let folders = 0
    let found = 0
    while (queue.length && folders < MAX_FOLDERS) {
      const dir = queue.shift()
      folders++
      const json = await api.ls(dir).catch(() => null)
      if (!json) continue
      for (const e of json.results) {
        const path = join(dir, e.name)
        if (e.type === 'directory') queue.push(`${path}/`)
        if (!e.name.toLowerCase().includes(needle)) continue
        found++
        const openIt = () => {
          if (e.type === 'directory') return go(`${path}/`)
          state.selected = new Set([e.name])
          go(dir)
          state.selected = new Set([e.name])
        }
        list.append(el('li', {}, el('button', { type: 'button', class: 'link', onclick: openIt }, icon(kindOf(e)), ` ${path}`), e.type === 'file' ? ` — ${formatSize(e.size)}` : ''))
      }
    }
    summary.textContent = `${found} found${queue.length ? ` (the search stopped after ${MAX_FOLDERS} folders)` : ''}.`
    results.querySelector('h2').setAttribute('tabindex', '-1')
    results.querySelector('h2').focus()
  }

  load()
  return { reload: load, go }
}
