/**
 * @module gateways/mcp/call-meter
 * The MCP door's request count (core/doors.ts, `DoorMeter`): one request is one
 * JSON-RPC call, counted when its answer leaves the session's transport, whichever
 * transport (Streamable HTTP, legacy SSE) and whatever the call (initialize, tools/call,
 * resources/read...). A failed call is counted by its JSON-RPC error, a tool's `isError`
 * result as `tool_error`.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { DoorMeter } from '../../core/doors.js'

/** JSON-RPC error codes (JSON-RPC 2.0, MCP) as the metrics name them; any other is `server_error` or `other`. */
const ERRORS: Readonly<Record<number, string>> = {
  [-32700]: 'parse_error',
  [-32600]: 'invalid_request',
  [-32601]: 'method_not_found',
  [-32602]: 'invalid_params',
  [-32603]: 'internal_error',
  [-32002]: 'resource_not_found',
}

/** Counts every answer `transport` sends from now on. */
export function countCalls(transport: Transport, meter: DoorMeter): void {
  const send = transport.send.bind(transport)
  transport.send = (message, options) => {
    const m = message as { id?: unknown; result?: { isError?: unknown }; error?: { code?: unknown } }
    if (m.id !== undefined && !('method' in message)) {
      if (m.error !== undefined) meter.request(errorClass(m.error.code))
      else meter.request(m.result?.isError === true ? 'tool_error' : undefined)
    }
    return send(message, options)
  }
}

function errorClass(code: unknown): string {
  if (typeof code !== 'number') return 'other'
  return ERRORS[code] ?? (code <= -32000 && code >= -32099 ? 'server_error' : 'other')
}
