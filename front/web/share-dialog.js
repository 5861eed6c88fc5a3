// Making a share link (POST /api/share): its rights, an optional password and expiry,
// then the link to copy. The link opens the share page, /s/<id>, in any browser.
import { dialog, el, field, flash } from './ui.js'

const RIGHTS = [
  ['read', 'View and download', { can_read: true, can_upload: false, can_write: false }],
  ['upload', 'Upload only (a drop box: nothing can be seen)', { can_read: false, can_upload: true, can_write: false }],
  ['read-upload', 'View, download and upload', { can_read: true, can_upload: true, can_write: false }],
  ['write', 'Everything: also replace, rename, move and delete', { can_read: true, can_upload: true, can_write: true }],
]

export async function createShare(api, path) {
  const radios = RIGHTS.map(([v, label], i) => {
    const input = el('input', { type: 'radio', name: 'rights', value: v, checked: i === 0, id: `right-${v}` })
    return el('label', { class: 'check' }, input, label)
  })
  const password = field('Password (optional)', { type: 'password', id: 'share-password', autocomplete: 'new-password' })
  const expire = field('Expires (optional)', { type: 'datetime-local', id: 'share-expire' })
  const share = await dialog({
    title: `Share ${path}`,
    submitLabel: 'Create link',
    body: (form) => form.append(el('fieldset', {}, el('legend', {}, 'Who has the link may'), ...radios), password.label, expire.label),
    submit: async (form) => {
      const rights = RIGHTS.find(([v]) => v === form.querySelector('input[name=rights]:checked')?.value)[2]
      let exp = null
      if (expire.input.value) {
        exp = new Date(expire.input.value).getTime()
        if (!(exp > Date.now())) throw new Error('The expiry must be in the future.')
      }
      const res = await api.json('POST', '/api/share', {}, { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ path, ...rights, password: password.input.value || null, expire: exp }) })
      return res.result
    },
  })
  if (!share) return null
  const link = `${location.origin}/s/${share.id}`
  const out = el('input', { type: 'text', readonly: true, value: link, id: 'share-link', 'aria-label': 'The share link' })
  const copied = el('p', { class: 'hint', 'aria-live': 'polite' })
  const copy = el('button', {
    type: 'button',
    id: 'copy-link',
    onclick: async () => {
      try {
        await navigator.clipboard.writeText(link)
        copied.textContent = 'Copied.'
      } catch {
        // No clipboard permission: select the text so that Ctrl+C copies it.
        out.select()
        copied.textContent = 'Press Ctrl+C (or ⌘C) to copy the selected link.'
      }
    },
  }, 'Copy link')
  await dialog({
    title: 'Share link',
    cancelLabel: 'Done',
    body: (form) => form.append(el('p', {}, share.has_password ? 'Send the password another way than the link.' : 'Anyone with this link can use it.'), el('div', { class: 'linkbox' }, out, copy), copied),
  })
  flash('Share link created')
  return share
}
