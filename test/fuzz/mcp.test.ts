/** The MCP gateway's door, fuzzed with a fixed seed (test/fuzz/mcp.ts). */
import t from 'tap'
import { fuzzInTap } from './ci.js'
import { mcpDoor } from './mcp.js'

await fuzzInTap(t, mcpDoor, 100)
