// The web file manager's entry: `/` is the login page then the browser; `/s/<id>` is
// a share page (password prompt when it has one). Everything goes through the public
// HTTP API (docs/api.md). The session token is kept in sessionStorage: it survives a
// reload of this tab (so that an upload can resume) and ends with the tab.
import { ApiFailure, client, login } from './api.js'
import { mountBrowser } from './browser.js'
import { attempt, clearError, el, field, showError } from './ui.js'
import { uploadAll } from './uploads.js'

const main = document.getElementById('main')
const where = document.getElementById('where')
const logoutButton = document.getElementById('logout')
const TOKEN = 'filegate-web-token'

function card(...children) {
  return el('section', { class: 'card narrow' }, ...children)
}

// ---------- the session side: / ----------

function loginPage() {
  where.textContent = ''
  logoutButton.hidden = true
  const modes = [
    ['tmp', 'A scratch space'],
    ['connection', 'A configured connection'],
    ['gateway', 'A gateway user'],
  ]
  const mode = el('select', { id: 'login-mode' }, modes.map(([v, l]) => el('option', { value: v }, l)))
  const user = field('Your user id (letters, digits, _ and -)', { id: 'login-user', type: 'text', autocomplete: 'username', pattern: '[A-Za-z0-9_\\-]{1,64}' })
  const label = field('Connection name (its label in the configuration)', { id: 'login-label', type: 'text', autocomplete: 'off' })
  const username = field('User name on that storage (if it asks for one)', { id: 'login-username', type: 'text', autocomplete: 'username' })
  const password = field('Password', { id: 'login-password', type: 'password', autocomplete: 'current-password' })
  const gwUser = field('Gateway user name', { id: 'login-gw-user', type: 'text', autocomplete: 'username' })
  const gwPassword = field('Password', { id: 'login-gw-password', type: 'password', autocomplete: 'current-password' })
  const error = el('p', { class: 'error', role: 'alert', id: 'login-error', hidden: true })
  const tmpFields = el('div', { class: 'stack' }, user.label, el('p', { class: 'hint' }, 'A private folder on this server for that id, where the server allows it.'))
  const connFields = el('div', { class: 'stack', hidden: true }, label.label, username.label, password.label)
  const gwFields = el(
    'div',
    { class: 'stack', hidden: true },
    gwUser.label,
    gwPassword.label,
    el('p', { class: 'hint' }, 'An account the administrator made for SFTP, S3 or MCP: its folder, with its rights.'),
  )
  const sync = () => {
    tmpFields.hidden = mode.value !== 'tmp'
    connFields.hidden = mode.value !== 'connection'
    gwFields.hidden = mode.value !== 'gateway'
    user.input.required = mode.value === 'tmp'
    label.input.required = mode.value === 'connection'
    gwUser.input.required = mode.value === 'gateway'
    gwPassword.input.required = mode.value === 'gateway'
  }
  mode.addEventListener('change', sync)
  sync()
  const submit = el('button', { type: 'submit' }, 'Log in')
  const form = el('form', { class: 'stack', id: 'login-form', novalidate: true }, el('label', {}, 'Open', mode), tmpFields, connFields, gwFields, submit, error)
  form.addEventListener('submit', async (e) => {
    e.preventDefault()
    error.hidden = true
    if (!form.reportValidity()) return
    const body =
      mode.value === 'tmp'
        ? { type: 'tmp', userID: user.input.value.trim() }
        : mode.value === 'gateway'
          ? { type: 'gateway', user: gwUser.input.value.trim(), password: gwPassword.input.value }
          : { label: label.input.value.trim(), ...(username.input.value ? { username: username.input.value } : {}), ...(password.input.value ? { password: password.input.value } : {}) }
    submit.disabled = true
    try {
      const result = await login(body)
      sessionStorage.setItem(TOKEN, result.authorization)
      sessionStorage.setItem(`${TOKEN}-name`, body.userID ?? body.user ?? body.label)
      sessionPage()
    } catch (err) {
      error.textContent = err.message
      error.hidden = false
    } finally {
      submit.disabled = false
    }
  })
  main.replaceChildren(card(el('h2', {}, 'Log in'), form))
  mode.focus()
}

async function sessionPage() {
  const token = sessionStorage.getItem(TOKEN)
  if (!token) return loginPage()
  const api = client({ token })
  // A token that has expired or was revoked: back to the login, saying why.
  const ok = await api.json('GET', '/api/session').then(
    () => true,
    (err) => {
      if (err instanceof ApiFailure && err.status === 401) {
        sessionStorage.removeItem(TOKEN)
        loginPage()
        showError(new Error('Your session has ended: log in again.'))
        return false
      }
      showError(err)
      return false
    },
  )
  if (!ok) return
  where.textContent = sessionStorage.getItem(`${TOKEN}-name`) ?? ''
  logoutButton.hidden = false
  logoutButton.onclick = async () => {
    await attempt(() => api.json('DELETE', '/api/session'))
    sessionStorage.removeItem(TOKEN)
    history.replaceState(null, '', '/')
    clearError()
    loginPage()
  }
  mountBrowser(main, { api, scope: 'session', title: 'Files' })
}

// ---------- the share side: /s/<id> ----------

function message(title, text) {
  main.replaceChildren(el('section', { class: 'card narrow message', id: 'share-message' }, el('h2', {}, title), el('p', {}, text)))
  main.focus()
}

async function sharePage(id) {
  where.textContent = 'shared with you'
  const saved = sessionStorage.getItem(`filegate-share-${id}`)
  const api = client({ share: id, password: saved ?? undefined })
  try {
    await api.ls('/')
  } catch (err) {
    if (!(err instanceof ApiFailure)) throw err
    if (err.status === 401) return passwordPrompt(id, saved !== null)
    if (err.status === 404) return message('This link does not work', 'The share does not exist: it was removed, or the link is incomplete. Ask whoever sent it for a new one.')
    if (err.status === 410) return message('This link has expired', 'Ask whoever sent it for a new one.')
    if (err.status === 403) return dropBox(api, id)
    if (err.status === 429) return message('Too many wrong passwords', 'Wait a quarter of an hour, then open the link again.')
    return message('This share cannot be opened now', err.message)
  }
  mountBrowser(main, { api, scope: `share:${id}`, share: true, title: 'Shared files', rootName: 'Shared' })
}

function passwordPrompt(id, wasWrong) {
  const pw = field('Password', { type: 'password', id: 'share-password-input', required: true, autocomplete: 'current-password' })
  const error = el('p', { class: 'error', role: 'alert', hidden: !wasWrong }, wasWrong ? 'Wrong password.' : '')
  const submit = el('button', { type: 'submit' }, 'Open')
  const form = el('form', { class: 'stack', id: 'share-password-form', novalidate: true }, el('p', {}, 'This share is protected by a password.'), pw.label, submit, error)
  form.addEventListener('submit', async (e) => {
    e.preventDefault()
    if (!form.reportValidity()) return
    submit.disabled = true
    error.hidden = true
    try {
      await client({ share: id, password: pw.input.value }).ls('/')
      sessionStorage.setItem(`filegate-share-${id}`, pw.input.value)
      sharePage(id)
    } catch (err) {
      if (err instanceof ApiFailure && err.status === 403) {
        sessionStorage.setItem(`filegate-share-${id}`, pw.input.value)
        return sharePage(id)
      }
      error.textContent = err.status === 401 ? 'Wrong password.' : err.message
      error.hidden = false
      pw.input.focus()
    } finally {
      submit.disabled = false
    }
  })
  main.replaceChildren(card(el('h2', {}, 'Password needed'), form))
  pw.input.focus()
}

/** An upload-only share: nothing to list, a place to drop or pick files. */
function dropBox(api, id) {
  const panel = el('div', { class: 'uploads', role: 'region', 'aria-label': 'Uploads' })
  const done = el('ul', { id: 'uploaded', 'aria-label': 'Uploaded files' })
  const pick = el('input', { type: 'file', multiple: true, id: 'dropbox-files', 'aria-label': 'Choose files to upload' })
  const run = async (items) => {
    clearError()
    const r = await uploadAll({ api, scope: `share:${id}`, dir: '/', items, panel, overwrite: false })
    for (const { rel } of items) if (!r.failures.some((f) => f.rel === rel)) done.append(el('li', {}, `${rel} — uploaded`))
    if (r.failures.length) showError(new Error(`Not uploaded: ${r.failures.map((f) => `${f.rel} (${f.message})`).join('; ')}`))
  }
  pick.addEventListener('change', () => {
    const items = [...pick.files].map((f) => ({ file: f, rel: f.name }))
    pick.value = ''
    run(items)
  })
  const box = el('section', { class: 'card drop', id: 'dropbox' }, el('h2', {}, 'Upload files'), el('p', { class: 'hint' }, 'Files you send here are delivered to whoever shared this link. You cannot see what is in it, nor replace a file already there.'), el('label', {}, 'Files', pick), panel, done)
  box.addEventListener('dragover', (e) => (e.preventDefault(), box.classList.add('over')))
  box.addEventListener('dragleave', () => box.classList.remove('over'))
  box.addEventListener('drop', (e) => {
    e.preventDefault()
    box.classList.remove('over')
    run([...e.dataTransfer.files].map((f) => ({ file: f, rel: f.name })))
  })
  main.replaceChildren(box)
}

const m = /^\/s\/([A-Za-z0-9_-]+)$/.exec(location.pathname)
if (m) sharePage(m[1]).catch(showError)
else sessionPage().catch(showError)
