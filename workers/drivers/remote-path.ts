/**
 * @module workers/drivers/remote-path
 * Storage paths (canonical, `/` = the storage root) → paths on a remote server
 * whose root folder is `root` (absolute, or '/' for the server's own root).
 */

/** The remote path of a canonical storage path. */
export function remotePath(root: string, path: string): string {
  if (path === '/') return root
  return root === '/' ? path : root + path
}

/** The folder holding a remote path ('' when it has none). */
export function remoteParent(abs: string): string {
  const i = abs.lastIndexOf('/')
  return i <= 0 ? '' : abs.slice(0, i)
}
