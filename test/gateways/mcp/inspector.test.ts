/**
 * The MCP Inspector's CLI (@modelcontextprotocol/inspector-cli), an independent client,
 * lists and calls filegate's tools over both transports, and reads a resource.
 */
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { startTestServer, tmpSession } from '../../helpers/filegate.js'

const CLI_DIR = fileURLToPath(new URL('../../../node_modules/@modelcontextprotocol/inspector-cli/build/', import.meta.url))

/**
 * Runs the CLI. Its cwd is its own build folder: inspector-cli 1.0.3 looks for
 * `../package.json` relative to the working directory but imports it relative to itself.
 */
function inspector(args: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [`${CLI_DIR}cli.js`, '--cli', ...args], { cwd: CLI_DIR, timeout: 60_000 }, (err, out, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out, err: stderr }),
    )
  })
}

t.test('the Inspector CLI lists and calls the tools, over /mcp and /sse', async (t) => {
  const { url } = await startTestServer(t)
  const token = await tmpSession(url)
  await fetch(`${url}/api/files/mkdir?path=/projects/`, { method: 'POST', headers: { authorization: `Bearer ${token}` } })
  const auth = ['--header', `Authorization: Bearer ${token}`]
  for (const [path, transport] of [
    ['/mcp', 'http'],
    ['/sse', 'sse'],
  ] as const) {
    const list = await inspector([`${url}${path}`, '--transport', transport, '--method', 'tools/list', ...auth])
    t.equal(list.code, 0, list.err)
    const tools = (JSON.parse(list.out) as { tools: { name: string; annotations?: object }[] }).tools
    t.same(tools.map((x) => x.name).sort(), ['cat', 'find', 'ls', 'mkdir', 'mv', 'rm', 'share', 'stat', 'touch', 'write'], `${path}: tools/list`)
    const write = await inspector([`${url}${path}`, '--transport', transport, '--method', 'tools/call', '--tool-name', 'write', '--tool-arg', `path=/projects/${transport}.md`, 'content=hello', ...auth])
    t.equal(write.code, 0, write.err)
    const ls = await inspector([`${url}${path}`, '--transport', transport, '--method', 'tools/call', '--tool-name', 'ls', '--tool-arg', 'path=/', ...auth])
    t.equal(ls.code, 0, ls.err)
    t.match(JSON.parse(ls.out), { content: [{ type: 'text', text: '[DIR] projects' }], structuredContent: { entries: [{ name: 'projects', type: 'directory' }] } })
    const read = await inspector([`${url}${path}`, '--transport', transport, '--method', 'resources/read', '--uri', `filegate:///projects/${transport}.md`, ...auth])
    t.equal(read.code, 0, read.err)
    t.match(JSON.parse(read.out), { contents: [{ text: 'hello' }] })
  }
  const refused = await inspector([`${url}/mcp`, '--transport', 'http', '--method', 'tools/list'])
  t.not(refused.code, 0, 'without a credential it cannot connect')
  t.match(refused.err, /unauthorized|401/)
})
