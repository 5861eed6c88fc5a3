/**
 * Debian's boto3 against an S3 endpoint of ours: a script runs with `s3`, a path-style
 * client for the login, already made (and `json`, `os` imported), and without the
 * machine's AWS_CA_BUNDLE (set on some machines, it breaks plain-http endpoints).
 */
import { runCommand } from '../gateways/sftp/clients.js'
import { requireBinary } from '../servers/process.js'
import type { AwsLogin } from './aws-cli.js'

const PRELUDE = String.raw`
import json, os, boto3
from botocore.config import Config
s3 = boto3.client('s3', endpoint_url=os.environ['ENDPOINT'], region_name='us-east-1',
    aws_access_key_id=os.environ['KEY_ID'], aws_secret_access_key=os.environ['SECRET'],
    config=Config(s3={'addressing_style': 'path'}, retries={'max_attempts': 1}))
`

export function runBoto3(login: AwsLogin, script: string, opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}) {
  requireBinary('/usr/lib/python3/dist-packages/boto3', 'python3-boto3')
  const { AWS_CA_BUNDLE: _, ...env } = process.env
  return runCommand('/usr/bin/python3', ['-c', PRELUDE + script], {
    env: { ...env, ...opts.env, ENDPOINT: login.endpoint, KEY_ID: login.accessKeyId, SECRET: login.secretAccessKey },
    timeoutMs: opts.timeoutMs ?? 120_000,
  })
}
