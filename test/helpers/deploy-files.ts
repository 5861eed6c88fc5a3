/**
 * The files of deploy/ filled in, as docs/deployment.md tells an operator to: every
 * `@NAME@` replaced by its value, and every line holding a `@NODE_...@` placeholder
 * written once per node with that node's values. Comment lines (`#`) are left as they
 * are. A placeholder left without a value is an error, so a new one in a file cannot
 * slip through the tests unfilled.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const DEPLOY = fileURLToPath(new URL('../../deploy/', import.meta.url))
const PLACEHOLDER = /@([A-Z][A-Z0-9_]*)@/g

export function fillDeployFile(name: string, values: Readonly<Record<string, string>>, nodes: readonly Readonly<Record<string, string>>[] = []): string {
  const out: string[] = []
  for (const line of readFileSync(DEPLOY + name, 'utf8').split('\n')) {
    if (/^\s*#/.test(line)) {
      out.push(line)
      continue
    }
    const perNode = [...line.matchAll(PLACEHOLDER)].some((m) => m[1]!.startsWith('NODE_'))
    for (const vals of perNode ? nodes : [{}]) {
      out.push(
        line.replace(PLACEHOLDER, (_, key: string) => {
          const v = vals[key] ?? values[key]
          if (v === undefined) throw new Error(`deploy/${name}: no value for @${key}@`)
          return v
        }),
      )
    }
  }
  return out.join('\n')
}

/**
 * `KEY=value` lines of a filled environment file (deploy/filegate.env), as systemd's
 * EnvironmentFile= reads them: a value in single quotes is taken as it stands inside them.
 */
export function parseEnvFile(text: string): Record<string, string> {
  const env: Record<string, string> = {}
  for (const line of text.split('\n')) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line)
    if (m) env[m[1]!] = m[2]!.trim().replace(/^'(.*)'$/, '$1')
  }
  return env
}
