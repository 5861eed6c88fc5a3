/**
 * The backend fault matrix (test/reliability/faults.ts) on a real s3rver, through
 * the HTTP API and the SFTP, S3 and MCP gateways.
 */
import t from 'tap'
import { s3Backend } from './backends.js'
import { runFaultMatrix } from './faults.js'

// Each kill restarts the server; under a loaded CI the file may take longer than tap's default.
t.setTimeout(300_000)

await runFaultMatrix(t, s3Backend)
