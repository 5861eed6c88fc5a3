/**
 * @module gateways/connection/staging-sweep
 * The gateways' private staging copies live in `<data_dir>/gateway-staging/`, written by
 * the workers that own the open files (workers/handles/staging.ts). At start-up, before
 * anything is served, the folder is made (0700) and what a previous process left there
 * is removed.
 */
import * as fs from 'node:fs/promises'
import * as nodePath from 'node:path'

export async function sweepStaging(dir: string): Promise<void> {
  await fs.mkdir(dir, { recursive: true, mode: 0o700 })
  for (const name of await fs.readdir(dir)) await fs.rm(nodePath.join(dir, name), { force: true, recursive: true })
}
