/**
 * The docs travel with the code: every relative link of README.md and docs/*.md leads
 * to a file of the repository (never outside it), and docs/configuration.md names
 * every setting of core/config.ts with its environment variable.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { DEFAULTS } from '../core/config.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const pages = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]

t.test('relative links lead to files of the repository', async (t) => {
  for (const page of pages) {
    const text = readFileSync(join(ROOT, page), 'utf8')
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!) || target!.startsWith('#')) continue
      const file = resolve(dirname(join(ROOT, page)), target!.split('#')[0]!)
      const inside = !relative(ROOT, file).startsWith('..')
      t.ok(inside && existsSync(file), `${page}: ${target} is a file of the repository`)
    }
  }
})

t.test('docs/configuration.md lists every setting and its variable', async (t) => {
  const text = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8')
  for (const [key, value] of Object.entries(DEFAULTS)) {
    const nested = value !== null && typeof value === 'object' && !Array.isArray(value) ? Object.keys(value).map((k) => `${key}.${k}`) : [key]
    for (const name of nested) {
      t.match(text, `| \`${name}\` | \`FILEGATE_${name.replace('.', '_').toUpperCase()}\``, `${name} is documented`)
    }
  }
})
