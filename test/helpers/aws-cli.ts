/**
 * Debian's aws CLI (v2) against an S3 endpoint of ours, isolated from the machine's own
 * set-up: a config file of its own with a region (v2 needs one for `mb`), no shared
 * credentials, no instance metadata, no pager.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { runCommand } from '../gateways/sftp/clients.js'
import { requireBinary } from '../servers/process.js'

export interface AwsLogin {
  readonly endpoint: string
  readonly accessKeyId: string
  readonly secretAccessKey: string
}

export function awsCli(login: AwsLogin, dir: string, args: readonly string[], timeoutMs = 120_000) {
  const aws = requireBinary('/usr/bin/aws', 'awscli')
  const config = join(dir, 'aws-config')
  writeFileSync(config, '[default]\nregion = us-east-1\n')
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: dir,
    AWS_ACCESS_KEY_ID: login.accessKeyId,
    AWS_SECRET_ACCESS_KEY: login.secretAccessKey,
    AWS_CONFIG_FILE: config,
    AWS_SHARED_CREDENTIALS_FILE: join(dir, 'none'),
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_PAGER: '',
  }
  return runCommand(aws, ['--endpoint-url', login.endpoint, ...args], { env, timeoutMs })
}
