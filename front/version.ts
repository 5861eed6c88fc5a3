/**
 * @module front/version
 * filegate's version, from its package.json (found from this module upwards, so it
 * works from the sources and from dist/).
 */
import { readFileSync } from 'node:fs'

function find(): string {
  for (const rel of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as { name?: string; version?: string }
      if (pkg.name === 'filegate' && typeof pkg.version === 'string') return pkg.version
    } catch {
      // try the next
    }
  }
  return 'unknown'
}

export const version: string = find()
