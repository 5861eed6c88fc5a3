/**
 * The backend fault matrix (test/reliability/faults.ts) on a real Samba smbd, through
 * the HTTP API and the SFTP, S3 and MCP gateways.
 */
import t from 'tap'
import { smbBackend } from './backends.js'
import { runFaultMatrix } from './faults.js'

await runFaultMatrix(t, smbBackend)
