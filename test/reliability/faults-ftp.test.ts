/**
 * The backend fault matrix (test/reliability/faults.ts) on a real vsftpd, through the
 * HTTP API and the SFTP, S3 and MCP gateways.
 *
 * FTP moves file bytes and listings on passive data connections that go straight to
 * the server's own ports, around the fault proxy (which sits on the control
 * connection): a fault is timed by the bytes the client moved instead, and the cases
 * that can only be timed inside the proxy are left out (said in the output).
 */
import t from 'tap'
import { ftpBackend } from './backends.js'
import { runFaultMatrix } from './faults.js'

// Each kill restarts the server; under a loaded CI the file may take longer than tap's default.
t.setTimeout(300_000)

const DATA = 'FTP data connections bypass the fault proxy'
await runFaultMatrix(t, ftpBackend, {
  // One MCP call moves its bytes at once: no client progress to time the kill by.
  'killed mid-download': { doors: ['mcp'], why: `${DATA}, and an MCP call reports no progress` },
  'killed mid-upload': { doors: ['mcp'], why: `${DATA}, and an MCP call reports no progress` },
  'killed mid-listing': { doors: ['http', 'sftp', 's3', 'mcp'], why: `${DATA}: a listing cannot be stopped halfway` },
  'stalled mid-download': { doors: ['http', 'sftp', 's3', 'mcp'], why: `${DATA}: the file bytes cannot be stalled (the control connection's silence is "no answer")` },
})
