/**
 * @module bench/lib/bench
 * The frame every benchmark runs in: its name for the results file, handlers that
 * stop everything it started (also on Ctrl-C or failure), the compiled code to run
 * (lib/build.ts), and an exit code that is non-zero only when something broke (never
 * for slow figures).
 */
import { prepareDist } from './build.js'
import { env } from './env.js'
import { cleanup, installExitHandlers, isExiting } from './proc.js'
import { machineLine, progress } from './report.js'
import { serverReport } from './servers.js'

export function runBenchmark(name: string, body: () => Promise<void>): void {
  process.env.BENCH_NAME = name
  installExitHandlers()
  const main = async () => {
    progress(`${name}${env.quick ? ' (quick)' : ''}: ${machineLine()}`)
    await prepareDist()
    await body()
  }
  main().then(
    async () => {
      await cleanup()
      process.exit(0)
    },
    async (err: unknown) => {
      // Interrupted: the clients died of the same Ctrl-C; the exit handler is already stopping everything.
      if (isExiting()) return
      console.error(`\n${name} FAILED: ${(err as Error)?.stack ?? String(err)}`)
      const servers = serverReport()
      if (servers) console.error(`\nthe servers it started:\n${servers}`)
      await cleanup()
      process.exit(1)
    },
  )
}
