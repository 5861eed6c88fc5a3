/**
 * @module bench/mcp
 * What a tool call over MCP costs next to the same operation through the HTTP API, on
 * one filegate (its CLI, a tmp session as the bearer): sequential calls from one client,
 * interleaved, each case BENCH_MCP_CALLS times (quick: 50) per run:
 * - ls: a folder of 100 files (`tools/call ls` vs `GET /api/files/ls`);
 * - cat: a 64 KiB text file (`tools/call cat` vs `GET /api/files/cat`);
 * - session: open a session (initialize) and close it, per call (Streamable HTTP: DELETE;
 *   SSE: the stream closed) vs one `GET /api/session`.
 * Over Streamable HTTP (/mcp) and legacy SSE (/sse), with the SDK's own client. Figures:
 * median and p99 milliseconds per call, calls/s, filegate's CPU µs per call (all its
 * threads: steadier than times on a shared machine), and MCP ÷ HTTP API of the medians.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { runBenchmark } from './lib/bench.js'
import { env } from './lib/env.js'
import { fmt, fmtRatio, median, progress, publish, ratio, table } from './lib/report.js'
import { startFilegate, tempDir, tmpSession } from './lib/servers.js'
import { type Kind, mcpTransport } from '../test/gateways/mcp/client.js'

const CALLS = Number(process.env.BENCH_MCP_CALLS ?? (env.quick ? 50 : 1000))
if (!Number.isInteger(CALLS) || CALLS < 1) throw new Error('BENCH_MCP_CALLS must be a whole number >= 1')

async function connect(url: string, token: string, kind: Kind): Promise<Client> {
  const transport = mcpTransport(url, token, kind)
  const client = new Client({ name: 'filegate-bench', version: '1.0.0' })
  await client.connect(transport)
  return client
}

const percentile = (xs: readonly number[], p: number): number => {
  const v = [...xs].sort((a, b) => a - b)
  return v[Math.min(v.length - 1, Math.ceil((p / 100) * v.length) - 1)]!
}

/** Per-call milliseconds of `n` sequential calls. */
async function timed(n: number, call: () => Promise<void>): Promise<number[]> {
  const ms: number[] = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    await call()
    ms.push(performance.now() - t0)
  }
  return ms
}

runBenchmark('mcp', async () => {
  const server = await startFilegate(tempDir('mcp'))
  const token = await tmpSession(server.url, 'bench')
  const auth = { authorization: `Bearer ${token}` }
  for (let i = 0; i < 100; i++) await fetch(`${server.url}/api/files/cat?path=/folder/f${i}.txt`, { method: 'POST', headers: auth, body: 'x' })
  const text = 'filegate '.repeat((64 * 1024) / 9 + 1).slice(0, 64 * 1024)
  await fetch(`${server.url}/api/files/cat?path=/text.txt`, { method: 'POST', headers: auth, body: text })

  const http = {
    ls: async () => {
      const r = await fetch(`${server.url}/api/files/ls?path=/folder/`, { headers: auth })
      if (((await r.json()) as { results: unknown[] }).results.length !== 100) throw new Error('ls: wrong listing')
    },
    cat: async () => {
      const r = await fetch(`${server.url}/api/files/cat?path=/text.txt`, { headers: auth })
      if ((await r.text()).length !== text.length) throw new Error('cat: wrong size')
    },
    session: async () => {
      const r = await fetch(`${server.url}/api/session`, { headers: auth })
      if (r.status !== 200) throw new Error(`session: ${r.status}`)
      await r.arrayBuffer()
    },
  }
  const mcp = async (kind: Kind) => {
    const client = await connect(server.url, token, kind)
    const text0 = (r: unknown) => ((r as { content: { text: string }[] }).content[0]?.text ?? '')
    return {
      client,
      ls: async () => {
        if (text0(await client.callTool({ name: 'ls', arguments: { path: '/folder' } })).split('\n').length !== 100) throw new Error('mcp ls: wrong listing')
      },
      cat: async () => {
        if (text0(await client.callTool({ name: 'cat', arguments: { path: '/text.txt' } })).length !== text.length) throw new Error('mcp cat: wrong size')
      },
      session: async () => {
        const c = await connect(server.url, token, kind)
        if (kind === 'streamable') await (c.transport as StreamableHTTPClientTransport).terminateSession()
        await c.close()
      },
    }
  }

  const cases = ['ls', 'cat', 'session'] as const
  const servers = ['http-api', 'mcp-streamable', 'mcp-sse'] as const
  const samples: Record<string, number[][]> = {}
  const cpu: Record<string, number[]> = {}
  const runs: unknown[] = []
  for (let run = 0; run < env.runs; run++) {
    const clients = { 'mcp-streamable': await mcp('streamable'), 'mcp-sse': await mcp('sse') }
    for (const c of cases) {
      for (const s of servers) {
        progress(`run ${run + 1}/${env.runs}: ${c} via ${s}, ${CALLS} calls`)
        const fn = s === 'http-api' ? http[c] : clients[s][c]
        await fn() // warm-up
        const cpu0 = server.cpu()
        const ms = await timed(CALLS, fn)
        const cpuUs = ((server.cpu() - cpu0) * 1e6) / CALLS
        ;(samples[`${c}/${s}`] ??= []).push(ms)
        ;(cpu[`${c}/${s}`] ??= []).push(cpuUs)
        runs.push({ run, case: c, server: s, median_ms: median(ms), p99_ms: percentile(ms, 99), server_cpu_us: cpuUs })
      }
    }
    for (const x of Object.values(clients)) await x.client.close()
  }
  await server.stop()

  const figures: Record<string, unknown> = {}
  const ratios: Record<string, number | null> = {}
  const rows: string[][] = []
  for (const c of cases) {
    const med = (s: string) => median(samples[`${c}/${s}`]!.map((ms) => median(ms)))
    for (const s of servers) {
      const all = samples[`${c}/${s}`]!.flat()
      const m = med(s)
      const r = s === 'http-api' ? null : ratio(m, med('http-api'))
      const us = median(cpu[`${c}/${s}`]!)
      figures[`${c}/${s}`] = { median_ms: m, p99_ms: percentile(all, 99), calls_per_s: 1000 / m, server_cpu_us: us }
      if (r !== null) ratios[`${c}/${s}`] = r
      rows.push([c, s, fmt(m), fmt(percentile(all, 99)), fmt(1000 / m), fmt(us), s === 'http-api' ? 'reference' : fmtRatio(r)])
    }
  }
  publish({
    name: 'mcp',
    settings: { calls: CALLS, runs: env.runs, workers: env.workers },
    figures,
    ratios,
    runs,
    skipped: {},
    table: table(['case', 'via', 'median ms', 'p99 ms', 'calls/s', 'server CPU µs/call', 'median ÷ HTTP API'], rows),
  })
})
