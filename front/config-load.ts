/**
 * @module front/config-load
 * Where settings come from, lowest priority first: the defaults, the JSON config
 * file (`--config` or FILEGATE_CONFIG), environment variables FILEGATE_<SETTING>
 * (nested settings joined by `_`: FILEGATE_SESSION_TTL_SECONDS), then the
 * command-line flags of the common ones. Validation is core/config.ts's.
 */
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { type Config, ConfigError, DEFAULTS, validateConfig } from '../core/config.js'

export const FLAGS: Readonly<Record<string, string>> = {
  '--port': 'port',
  '--host': 'host',
  '--data-dir': 'data_dir',
  '--workers': 'workers',
  '--config': 'config',
}

export const USAGE = `usage: filegate [--config FILE] [--host ADDR] [--port N] [--data-dir DIR] [--workers N]

Every setting can also be given as an environment variable FILEGATE_<SETTING>
(e.g. FILEGATE_PORT, FILEGATE_DATA_DIR, FILEGATE_SESSION_TTL_SECONDS) or in the
JSON config file. See README.md.`

export function loadConfig(argv: readonly string[], env: NodeJS.ProcessEnv, cwd = process.cwd()): Config {
  const flags = parseFlags(argv)
  const file = flags.config ?? env.FILEGATE_CONFIG
  const fromFile = file === undefined ? {} : readConfigFile(resolve(cwd, file))
  delete flags.config
  const merged: Record<string, unknown> = { ...fromFile }
  for (const [key, value] of Object.entries(fromEnv(env))) merged[key] = mergeValue(merged[key], value)
  for (const [key, raw] of Object.entries(flags)) merged[key] = coerce(key, raw, `flag for ${key}`)
  const config = validateConfig(merged)
  const path = (p: string | null) => (p === null ? null : resolve(cwd, p))
  return { ...config, data_dir: resolve(cwd, config.data_dir), secret_file: path(config.secret_file), staging_dir: path(config.staging_dir) }
}

function parseFlags(argv: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {}
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    const [name, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined]
    const key = FLAGS[name]
    if (!key) throw new ConfigError(`unknown argument "${arg}"\n${USAGE}`)
    const value = inline ?? argv[++i]
    if (value === undefined) throw new ConfigError(`${name} needs a value`)
    out[key] = value
  }
  return out
}

function readConfigFile(path: string): Record<string, unknown> {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new ConfigError(`cannot read the config file ${path}: ${(err as Error).message}`)
  }
  try {
    const v = JSON.parse(text) as unknown
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not a JSON object')
    return v as Record<string, unknown>
  } catch (err) {
    throw new ConfigError(`the config file ${path} is not valid JSON: ${(err as Error).message}`)
  }
}

/** FILEGATE_* variables for every known setting, nested ones flattened with `_`. */
function fromEnv(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [key, dflt] of Object.entries(DEFAULTS)) {
    if (dflt !== null && typeof dflt === 'object' && !Array.isArray(dflt)) {
      for (const sub of Object.keys(dflt)) {
        const raw = env[`FILEGATE_${key}_${sub}`.toUpperCase()]
        if (raw !== undefined) out[key] = { ...(out[key] as object), [sub]: coerce(`${key}.${sub}`, raw, `FILEGATE_${key}_${sub}`.toUpperCase()) }
      }
      continue
    }
    const raw = env[`FILEGATE_${key}`.toUpperCase()]
    if (raw !== undefined) out[key] = coerce(key, raw, `FILEGATE_${key}`.toUpperCase())
  }
  return out
}

function mergeValue(base: unknown, over: unknown): unknown {
  if (base && over && typeof base === 'object' && typeof over === 'object' && !Array.isArray(base)) return { ...base, ...over }
  return over
}

/** A text value → the type its default has. */
function coerce(key: string, raw: string, source: string): unknown {
  const [top, sub] = key.split('.') as [keyof typeof DEFAULTS, string | undefined]
  const dflt = sub === undefined ? DEFAULTS[top] : (DEFAULTS[top] as unknown as Record<string, unknown>)[sub]
  if ((key === 'sftp.port' || key === 's3.port') && raw === 'off') return 'off'
  if (key === 'sftp.threads' && raw === 'auto') return 'auto'
  if (typeof dflt === 'number' || (dflt === null && (key === 'max_upload_bytes' || key === 'backend_timeout_seconds'))) {
    if (dflt === null && raw === '') return null
    if (!/^\d+$/.test(raw)) throw new ConfigError(`${source} must be a whole number (got "${raw}")`)
    return Number(raw)
  }
  if (typeof dflt === 'boolean') {
    if (!['true', 'false', '1', '0'].includes(raw)) throw new ConfigError(`${source} must be true or false (got "${raw}")`)
    return raw === 'true' || raw === '1'
  }
  if (Array.isArray(dflt)) {
    try {
      return JSON.parse(raw) as unknown
    } catch {
      throw new ConfigError(`${source} must be a JSON list`)
    }
  }
  return raw
}
