// Thumbnails in the listing, when the server has the plg_image_thumbnail plugin on
// (docs/plugins.md): small WebP images made and cached in its worker threads. The first
// request asks for one byte (Range): without the plugin the server answers with the
// image's first byte and the page stops asking; with it, the Range is ignored and the
// thumbnail comes whole. Thumbnails are kept for the page's life under path, size and time.

const SIZE = 64
const AT_ONCE = 3
const kept = new Map()
let enabled // undefined: not known yet

/** Replaces the icons of image rows (`[{ path, entry, icon }]`) with thumbnails, a few at a time. */
export async function showThumbnails(api, rows) {
  if (enabled === false) return
  const queue = [...rows]
  const one = async () => {
    for (let r = queue.shift(); r; r = queue.shift()) {
      if (enabled === false || !r.icon.isConnected) continue
      const key = `${api.cred.share ?? ''}:${r.path}:${r.entry.size}:${r.entry.time}`
      let url = kept.get(key)
      if (!url) {
        const res = await api.call('GET', '/api/files/cat', { path: r.path, thumbnail: String(SIZE) }, { headers: { range: 'bytes=0-0' } }).catch(() => null)
        if (!res) continue
        if (!(res.headers.get('content-type') ?? '').startsWith('image/webp')) {
          enabled = false
          await res.arrayBuffer()
          return
        }
        enabled = true
        url = URL.createObjectURL(await res.blob())
        kept.set(key, url)
      }
      const img = document.createElement('img')
      img.src = url
      img.alt = ''
      img.className = 'thumb'
      if (r.icon.isConnected) r.icon.replaceWith(img)
    }
  }
  // The first answer says whether the plugin is on: only then several at once.
  if (enabled === undefined) await one()
  await Promise.all(Array.from({ length: AT_ONCE }, one))
}
