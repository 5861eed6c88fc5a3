#!/usr/bin/env node
/**
 * @module front/main
 * The command line: load the configuration, start filegate, stop gracefully on
 * SIGTERM/SIGINT (a second signal stops at once).
 */
import { ConfigError } from '../core/config.js'
import { startFilegate } from './app.js'
import { USAGE, loadConfig } from './config-load.js'
import { createLogger } from './log.js'

async function main(): Promise<void> {
  const argv = process.argv.slice(2)
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(USAGE)
    return
  }
  const config = loadConfig(argv, process.env)
  const logger = createLogger(config.log.level)
  const app = await startFilegate(config, { logger })
  let stopping = false
  const stop = (signal: string) => {
    if (stopping) {
      logger.log('warn', 'second signal: stopping now', { signal })
      process.exit(1)
    }
    stopping = true
    logger.log('info', 'shutting down', { signal, grace_seconds: config.shutdown_grace_seconds })
    app.close().then(
      () => {
        logger.log('info', 'stopped')
        process.exit(0)
      },
      (err: unknown) => {
        logger.log('error', 'shutdown failed', { err: String(err) })
        process.exit(1)
      },
    )
  }
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
}

main().catch((err: unknown) => {
  const msg = err instanceof ConfigError ? `configuration error: ${err.message}` : `filegate could not start: ${(err as Error)?.message ?? String(err)}`
  // Plain text: whoever reads this is at a terminal or in a service manager's journal.
  process.stderr.write(`filegate: ${msg}\n`)
  process.exit(1)
})
