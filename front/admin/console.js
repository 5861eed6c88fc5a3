// filegate admin console: plain JS, no build, nothing fetched but this server's /admin/api/.
// The admin token lives in sessionStorage (this tab only) and expires after an hour.
'use strict'

const $ = (id) => document.getElementById(id)
let token = sessionStorage.getItem('filegate-admin-token')

async function call(method, path, body) {
  const res = await fetch(`/admin/api/${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  })
  let json
  try {
    json = await res.json()
  } catch {
    json = { status: 'error', message: `HTTP ${res.status}` }
  }
  if (res.status === 401 && path !== 'session') {
    logout('Your admin session has ended: log in again.')
    throw new Error(json.message)
  }
  if (json.status !== 'ok') throw Object.assign(new Error(json.message || `HTTP ${res.status}`), { status: res.status })
  return json
}

function flash(text, ok = false) {
  const f = $('flash')
  f.textContent = text
  f.className = ok ? 'flash ok' : 'flash'
  f.hidden = false
  clearTimeout(flash.timer)
  flash.timer = setTimeout(() => (f.hidden = true), 6000)
}

const when = (ms) => (ms === null || ms === undefined ? '—' : new Date(ms).toLocaleString())

function cell(text, cls) {
  const td = document.createElement('td')
  if (text instanceof Node) td.append(text)
  else td.textContent = text
  if (cls) td.className = cls
  return td
}

function tags(list) {
  const span = document.createElement('span')
  for (const x of list) {
    const t = document.createElement('span')
    t.className = 'tag'
    t.textContent = x
    span.append(t)
  }
  if (list.length === 0) span.textContent = '—'
  return span
}

/** The eight permission bits (core/permissions.ts), with the words the console shows for them. */
const BITS = [
  ['can_read', 'read'],
  ['can_create_file', 'create files'],
  ['can_create_directory', 'create folders'],
  ['can_rename', 'rename'],
  ['can_move', 'move'],
  ['can_upload', 'upload'],
  ['can_delete', 'delete'],
  ['can_share', 'share'],
]
/** What a gateway user may have: every bit but can_share (a share link would outlive the user). */
const GRANTABLE = BITS.map(([n]) => n).filter((n) => n !== 'can_share')
const bitsOf = (names) => Object.fromEntries(BITS.map(([n]) => [n, names.includes(n)]))
const READ_WRITE = bitsOf(GRANTABLE)
const READ_ONLY = bitsOf(['can_read'])
const sameBits = (a, b) => BITS.every(([n]) => Boolean(a[n]) === Boolean(b[n]))
const both = (a, b) => Object.fromEntries(BITS.map(([n]) => [n, Boolean(a[n] && b[n])]))

/** Bits in a few words: "read-only", "read-write", "no access", or a tag per bit granted. */
function bitsSummary(p) {
  const span = document.createElement('span')
  span.className = 'bits'
  span.title = BITS.map(([n]) => `${n}: ${p[n] ? 'yes' : 'no'}`).join('\n')
  if (sameBits(p, READ_ONLY)) span.textContent = 'read-only'
  else if (sameBits(p, READ_WRITE)) span.textContent = 'read-write'
  else if (BITS.every(([n]) => !p[n])) span.textContent = 'no access'
  else span.append(tags(BITS.filter(([n]) => p[n]).map(([, label]) => label)))
  return span
}

/**
 * Eight checkboxes, one per bit, checked as `p` says; can_share is shown but cannot be
 * granted. `el.value()` is the bits as checked.
 */
function bitsEditor(p) {
  const box = document.createElement('fieldset')
  box.className = 'bits-editor'
  const legend = document.createElement('legend')
  legend.textContent = 'Permissions'
  box.append(legend)
  for (const [name, label] of BITS) {
    const l = document.createElement('label')
    l.className = 'check'
    l.title = name
    const input = document.createElement('input')
    input.type = 'checkbox'
    input.name = name
    input.checked = Boolean(p[name])
    if (name === 'can_share') {
      input.disabled = true
      l.title = 'can_share cannot be granted to a gateway user: a share link would outlive it'
    }
    l.append(input, ` ${label}`)
    box.append(l)
  }
  box.value = () => Object.fromEntries(BITS.map(([n]) => [n, box.elements[n].checked]))
  box.set = (q) => {
    for (const [n] of BITS) box.elements[n].checked = Boolean(q[n])
  }
  return box
}

/** A form's line for its own errors (the flash is at the top of the page, maybe out of sight). */
function errorLine() {
  const p = document.createElement('p')
  p.className = 'error'
  p.setAttribute('role', 'alert')
  p.hidden = true
  return p
}

/** Runs `fn` like `act`, and shows its error on `line` too. */
async function actShowing(line, fn, okText) {
  line.hidden = true
  try {
    const r = await fn()
    if (okText) flash(okText, true)
    return r
  } catch (err) {
    line.textContent = err.message
    line.hidden = false
    flash(err.message)
    return undefined
  }
}

function button(label, onClick, cls = 'danger') {
  const b = document.createElement('button')
  b.type = 'button'
  b.className = cls
  b.textContent = label
  b.addEventListener('click', onClick)
  return b
}

function fill(tbody, rows, columns, emptyText) {
  tbody.replaceChildren()
  if (rows.length === 0) {
    const tr = document.createElement('tr')
    const td = cell(emptyText, 'empty')
    td.colSpan = columns
    tr.append(td)
    tbody.append(tr)
    return
  }
  for (const cells of rows) {
    const tr = document.createElement('tr')
    tr.append(...cells)
    tbody.append(tr)
  }
}

async function loadStatus() {
  const { result: s } = await call('GET', 'status')
  const items = [
    ['Version', s.version],
    ['Uptime', `${Math.floor(s.uptime_ms / 60000)} min`],
    ['Sessions issued', s.sessions_issued],
    ['Transfers in flight', s.transfers_in_flight],
    ...Object.entries(s.pool || {}).filter(([, v]) => typeof v === 'number').map(([k, v]) => [`Pool ${k.replace(/_/g, ' ')}`, v]),
  ]
  $('status').replaceChildren(
    ...items.map(([k, v]) => {
      const d = document.createElement('div')
      const dt = document.createElement('dt')
      dt.textContent = k
      const dd = document.createElement('dd')
      dd.textContent = String(v)
      d.append(dt, dd)
      return d
    }),
  )
  const sel = $('user-connection')
  if (sel.options.length === 0) {
    for (const label of ['tmp', ...(s.connections || []).map((c) => c.label)]) sel.append(new Option(label, label))
  }
}

async function loadKeys() {
  const { results } = await call('GET', 'keys')
  fill(
    $('keys'),
    results.map((k) => [
      cell(k.name),
      cell(k.id, 'mono'),
      cell(tags(k.origins)),
      cell(when(k.created)),
      cell(when(k.last_used)),
      cell(
        button('Revoke', async () => {
          if (!confirm(`Revoke the API key "${k.name}"? Clients using it are refused at once.`)) return
          await act(() => call('DELETE', `keys/${encodeURIComponent(k.id)}`), `Key "${k.name}" revoked.`)
          await loadKeys()
        }),
      ),
    ]),
    6,
    'No API keys yet.',
  )
}

async function loadShares() {
  const { results } = await call('GET', 'shares')
  fill(
    $('shares'),
    results.map((s) => [
      cell(s.id, 'mono'),
      cell(s.path + (s.type === 'directory' ? '/' : '')),
      cell(tags([s.can_read && 'read', s.can_upload && 'upload', s.can_write && 'write'].filter(Boolean))),
      cell(s.has_password ? 'yes' : 'no'),
      cell(s.expire ? when(s.expire) : 'never'),
      cell(s.owner, 'mono'),
      cell(
        button('Revoke', async () => {
          if (!confirm(`Revoke share ${s.id}?`)) return
          await act(() => call('DELETE', `shares/${encodeURIComponent(s.id)}`), 'Share revoked.')
          await loadShares()
        }),
      ),
    ]),
    7,
    'No shares.',
  )
}

/** Users whose keys panel is open. */
const openUsers = new Set()
/** S3 keys (access key ids) whose permissions editor is open. */
const openS3Keys = new Set()
/** The S3 key just made (`{user, access_key_id, secret_access_key}`), shown in its user's panel until dismissed: its secret is never told again. */
let newS3Key = null

async function loadUsers() {
  const { results } = await call('GET', 'users')
  fill(
    $('users'),
    results.map((u) => [
      cell(u.name),
      cell(u.connection),
      cell(u.root, 'mono'),
      cell(bitsSummary(u.permissions)),
      cell(tags([u.has_password && 'password', u.keys.length > 0 && `${u.keys.length} key${u.keys.length > 1 ? 's' : ''}`].filter(Boolean))),
      cell(when(u.created)),
      cell(
        actions(
          button(openUsers.has(u.name) ? 'Close' : 'Keys & password', () => {
            if (!openUsers.delete(u.name)) openUsers.add(u.name)
            act(loadUsers)
          }, 'ghost small'),
          button('Remove', async () => {
            if (!confirm(`Remove gateway user "${u.name}"?`)) return
            openUsers.delete(u.name)
            await act(() => call('DELETE', `users/${encodeURIComponent(u.name)}`), `User "${u.name}" removed.`)
            await loadUsers()
          }),
        ),
      ),
    ]),
    7,
    'No gateway users.',
  )
  // Each open user gets a row of its own under its line: its keys, a key to add, a new password.
  for (const u of results) {
    if (!openUsers.has(u.name)) continue
    const line = [...$('users').rows].find((r) => r.cells[0].textContent === u.name)
    const detail = document.createElement('tr')
    detail.className = 'detail'
    detail.dataset.user = u.name
    const td = cell(userPanel(u))
    td.colSpan = 7
    detail.append(td)
    line.after(detail)
  }
}

function actions(...buttons) {
  const span = document.createElement('span')
  span.className = 'actions'
  span.append(...buttons)
  return span
}

function userPanel(u) {
  const panel = document.createElement('div')
  panel.className = 'panel'
  const table = document.createElement('table')
  table.innerHTML = '<thead><tr><th>Key type</th><th>Fingerprint</th><th>Comment</th><th>Added</th><th></th></tr></thead><tbody></tbody>'
  fill(
    table.tBodies[0],
    u.keys.map((k) => [
      cell(k.type),
      cell(k.fingerprint, 'mono'),
      cell(k.comment || '—'),
      cell(when(k.created)),
      cell(
        button('Remove', async () => {
          if (!confirm(`Remove the key ${k.fingerprint} of "${u.name}"?`)) return
          await act(() => call('DELETE', `users/${encodeURIComponent(u.name)}/keys/${encodeURIComponent(k.fingerprint)}`), 'Key removed.')
          await loadUsers()
        }),
      ),
    ]),
    5,
    'No keys: this user logs in with its password.',
  )
  const keyForm = document.createElement('form')
  keyForm.className = 'row key-form'
  keyForm.innerHTML = '<label class="grow">Add a public key <input name="key" class="mono" required placeholder="ssh-ed25519 AAAA... me@laptop"></label><button type="submit">Add key</button>'
  keyForm.addEventListener('submit', async (e) => {
    e.preventDefault()
    const r = await act(() => call('POST', `users/${encodeURIComponent(u.name)}/keys`, { key: keyForm.key.value }), `Key added to "${u.name}".`)
    if (r) await loadUsers()
  })
  const pwForm = document.createElement('form')
  pwForm.className = 'row password-form'
  pwForm.innerHTML = '<label>New password <input name="password" type="password" required minlength="8" autocomplete="new-password"></label><button type="submit">Set password</button>'
  pwForm.addEventListener('submit', async (e) => {
    e.preventDefault()
    const r = await act(() => call('PATCH', `users/${encodeURIComponent(u.name)}`, { password: pwForm.password.value }), `Password of "${u.name}" changed.`)
    if (r) await loadUsers()
  })
  panel.append(table, keyForm, pwForm, userBitsForm(u), s3Keys(u))
  return panel
}

/** A user's eight bits, checked as they are, saved with PATCH: its logins get them (docs/gateways.md). */
function userBitsForm(u) {
  const form = document.createElement('form')
  form.className = 'row user-bits'
  const editor = bitsEditor(u.permissions)
  const save = document.createElement('button')
  save.type = 'submit'
  save.textContent = 'Save permissions'
  const error = errorLine()
  form.append(editor, save, error)
  form.addEventListener('submit', async (e) => {
    e.preventDefault()
    const r = await actShowing(error, () => call('PATCH', `users/${encodeURIComponent(u.name)}`, { permissions: editor.value() }), `Permissions of "${u.name}" saved.`)
    if (r) await loadUsers()
  })
  return form
}

/** A user's S3 keys: listed (ids and bits), made (the secret shown once; its bits chosen), their bits changed, revoked. */
function s3Keys(u) {
  const path = `users/${encodeURIComponent(u.name)}/s3-keys`
  const box = document.createElement('div')
  box.className = 's3-keys'
  const head = document.createElement('div')
  head.className = 'card-head'
  head.innerHTML = '<h3>S3 keys</h3>'
  // A new key's bits: its user's unless narrowed here.
  const newBits = bitsEditor(u.permissions)
  newBits.classList.add('new-s3-key-bits')
  newBits.querySelector('legend').textContent = 'Permissions of a new key (never more than the user\'s)'
  const createError = errorLine()
  head.append(
    button('Create S3 key', async () => {
      const bits = newBits.value()
      const body = sameBits(bits, u.permissions) ? undefined : { permissions: bits }
      const r = await actShowing(createError, () => call('POST', path, body), `S3 key made for "${u.name}".`)
      if (!r) return
      newS3Key = { user: u.name, ...r.result }
      await loadUsers()
    }, 'small create-s3-key'),
  )
  box.append(head, newBits, createError)
  if (newS3Key && newS3Key.user === u.name) {
    const reveal = document.createElement('div')
    reveal.className = 'new-key new-s3-key'
    reveal.innerHTML =
      '<p><strong>Copy the secret now:</strong> it is shown only once.</p>' +
      '<div class="row"><label>Access key id <input name="access_key_id" class="mono" readonly></label>' +
      '<label class="grow">Secret access key <input name="secret_access_key" class="mono" readonly></label></div>'
    reveal.querySelector('[name=access_key_id]').value = newS3Key.access_key_id
    reveal.querySelector('[name=secret_access_key]').value = newS3Key.secret_access_key
    const secret = reveal.querySelector('[name=secret_access_key]')
    reveal.querySelector('.row').append(
      button('Copy secret', async () => {
        try {
          await navigator.clipboard.writeText(secret.value)
          flash('Secret copied to the clipboard.', true)
        } catch {
          secret.select()
          flash('Select and copy the secret (Ctrl+C).')
        }
      }, ''),
      button('Done', () => {
        newS3Key = null
        reveal.remove()
      }, 'ghost'),
    )
    box.append(reveal)
  }
  const table = document.createElement('table')
  table.innerHTML = '<thead><tr><th>Access key id</th><th>Permissions</th><th>Created</th><th>Last used</th><th></th></tr></thead><tbody></tbody>'
  box.append(table)
  act(async () => {
    const { results } = await call('GET', path)
    fill(
      table.tBodies[0],
      results.map((k) => [
        cell(k.access_key_id, 'mono'),
        cell(keyBits(u, k)),
        cell(when(k.created)),
        cell(when(k.last_used)),
        cell(
          actions(
            button(openS3Keys.has(k.access_key_id) ? 'Close' : 'Edit', () => {
              if (!openS3Keys.delete(k.access_key_id)) openS3Keys.add(k.access_key_id)
              act(loadUsers)
            }, 'ghost small'),
            button('Revoke', async () => {
              if (!confirm(`Revoke the S3 key ${k.access_key_id} of "${u.name}"? Requests signed with it are refused at once.`)) return
              if (newS3Key && newS3Key.access_key_id === k.access_key_id) newS3Key = null
              openS3Keys.delete(k.access_key_id)
              await act(() => call('DELETE', `${path}/${encodeURIComponent(k.access_key_id)}`), 'S3 key revoked.')
              await loadUsers()
            }),
          ),
        ),
      ]),
      5,
      'No S3 keys.',
    )
    for (const k of results) {
      if (!openS3Keys.has(k.access_key_id)) continue
      const line = [...table.tBodies[0].rows].find((r) => r.cells[0].textContent === k.access_key_id)
      const detail = document.createElement('tr')
      detail.className = 's3-key-detail'
      detail.dataset.key = k.access_key_id
      const td = cell(s3KeyBitsForm(u, k, `${path}/${encodeURIComponent(k.access_key_id)}`))
      td.colSpan = 5
      detail.append(td)
      line.after(detail)
    }
  })
  return box
}

/** What requests signed with key `k` may do: its bits and its user's both (null: its user's). */
function keyBits(u, k) {
  const span = document.createElement('span')
  if (k.permissions === null) {
    span.append(bitsSummary(u.permissions), ' ')
    const note = document.createElement('span')
    note.className = 'sub nowrap'
    note.textContent = "(the user's)"
    span.append(note)
    return span
  }
  return bitsSummary(both(k.permissions, u.permissions))
}

/** A key's own bits, checked as they are, saved with PATCH; or its user's bits again. */
function s3KeyBitsForm(u, k, keyPath) {
  const form = document.createElement('form')
  form.className = 'row s3-key-bits'
  const editor = bitsEditor(k.permissions ?? READ_WRITE)
  const save = document.createElement('button')
  save.type = 'submit'
  save.textContent = 'Save key permissions'
  const error = errorLine()
  const hint = document.createElement('p')
  hint.className = 'hint'
  hint.textContent = "A key never has more than its user: a bit the user lacks does nothing on the key."
  const saved = async (body, text) => {
    const r = await actShowing(error, () => call('PATCH', keyPath, body), text)
    if (r) await loadUsers()
  }
  form.append(
    editor,
    save,
    button("Use the user's permissions", () => saved({ permissions: null }, `S3 key ${k.access_key_id} has its user's permissions.`), 'ghost'),
    hint,
    error,
  )
  form.addEventListener('submit', (e) => {
    e.preventDefault()
    saved({ permissions: editor.value() }, `Permissions of S3 key ${k.access_key_id} saved.`)
  })
  return form
}

async function act(fn, okText) {
  try {
    const r = await fn()
    if (okText) flash(okText, true)
    return r
  } catch (err) {
    flash(err.message)
    return undefined
  }
}

async function loadAll() {
  await act(() => Promise.all([loadStatus(), loadKeys(), loadShares(), loadUsers()]))
}

function show(loggedIn) {
  $('login-view').hidden = loggedIn
  $('app-view').hidden = !loggedIn
  $('logout').hidden = !loggedIn
}

function logout(message) {
  token = null
  sessionStorage.removeItem('filegate-admin-token')
  show(false)
  if (message) {
    $('login-error').textContent = message
    $('login-error').hidden = false
  }
}

$('login-form').addEventListener('submit', async (e) => {
  e.preventDefault()
  $('login-error').hidden = true
  try {
    const { result } = await call('POST', 'session', { password: $('password').value })
    token = result.authorization
    sessionStorage.setItem('filegate-admin-token', token)
    $('password').value = ''
    show(true)
    await loadAll()
  } catch (err) {
    $('login-error').textContent = err.message
    $('login-error').hidden = false
  }
})

// Log out: the server revokes the token (DELETE /admin/api/session), then the page forgets it.
$('logout').addEventListener('click', async () => {
  try {
    await call('DELETE', 'session')
  } catch (err) {
    // 401: the token had expired or was revoked already. Otherwise it still works: stay, and say so.
    if (err.status !== 401) return flash(`Log-out failed: ${err.message}`)
  }
  logout()
})
$('refresh').addEventListener('click', () => loadAll())

$('key-form').addEventListener('submit', async (e) => {
  e.preventDefault()
  const origins = $('key-origins').value.split(/[\s,]+/).filter(Boolean)
  const r = await act(() => call('POST', 'keys', { name: $('key-name').value, origins }))
  if (!r) return
  $('new-key-value').value = r.result.key
  $('new-key').hidden = false
  $('key-form').reset()
  await loadKeys()
})

$('copy-key').addEventListener('click', async () => {
  const input = $('new-key-value')
  try {
    await navigator.clipboard.writeText(input.value)
    flash('Key copied to the clipboard.', true)
  } catch {
    input.select()
    flash('Select and copy the key (Ctrl+C).')
  }
})

$('dismiss-key').addEventListener('click', () => {
  $('new-key-value').value = ''
  $('new-key').hidden = true
})

$('user-form').addEventListener('submit', async (e) => {
  e.preventDefault()
  const key = $('user-key').value.trim()
  const body = {
    name: $('user-name').value,
    ...($('user-password').value ? { password: $('user-password').value } : {}),
    ...(key ? { authorized_keys: [key] } : {}),
    connection: $('user-connection').value,
    root: $('user-root').value || '/',
    permissions: newUserBits.value(),
  }
  const r = await act(() => call('POST', 'users', body), `Gateway user "${body.name}" added.`)
  if (!r) return
  $('user-form').reset()
  newUserBits.set(READ_WRITE)
  await loadUsers()
})

// A new user's bits: read-write unless chosen; "read-only" is the shorthand that checks can_read alone.
const newUserBits = bitsEditor(READ_WRITE)
newUserBits.id = 'user-bits'
$('user-bits-slot').replaceWith(newUserBits)
$('user-ro').addEventListener('change', () => newUserBits.set($('user-ro').checked ? READ_ONLY : READ_WRITE))
newUserBits.addEventListener('change', () => ($('user-ro').checked = sameBits(newUserBits.value(), READ_ONLY)))

show(Boolean(token))
if (token) loadAll()
