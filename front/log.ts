/**
 * @module front/log
 * Structured logs: one JSON object per line on stdout (stderr for warnings and
 * errors). Callers pass fields, never secrets: tokens, keys and passwords are
 * not logged, and request logs carry the URL path without its query.
 */

export type Level = 'debug' | 'info' | 'warn' | 'error'
const RANK: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 }

export interface Logger {
  log(level: Level, msg: string, fields?: Record<string, unknown>): void
}

export function createLogger(min: Level = 'info', write: (line: string, level: Level) => void = defaultWrite): Logger {
  return {
    log(level, msg, fields = {}) {
      if (RANK[level] < RANK[min]) return
      write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields }), level)
    },
  }
}

function defaultWrite(line: string, level: Level): void {
  ;(RANK[level] >= RANK.warn ? process.stderr : process.stdout).write(line + '\n')
}

/** A logger that drops everything (tests that do not read logs). */
export const silentLogger: Logger = { log() {} }
