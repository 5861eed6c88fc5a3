/**
 * @module workers/drivers/socket-errors
 * The socket-level error codes that mean "the server is not there (any more)", for
 * every remote driver's classify: connection refused or reset, no route, no such
 * host, a pipe or stream cut. Each maps to EUNAVAILABLE (retryable); the driver adds
 * its protocol's name to the message.
 */

/** Node's system and stream error codes of a connection that failed or went away. */
export const SOCKET_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'ERR_STREAM_PREMATURE_CLOSE',
])

/** The error's code when it is one of SOCKET_ERROR_CODES, else null. */
export function socketErrorCode(err: unknown): string | null {
  const code = (err as { code?: unknown } | null | undefined)?.code
  return typeof code === 'string' && SOCKET_ERROR_CODES.has(code) ? code : null
}
