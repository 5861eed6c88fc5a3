/**
 * @module bench/ref/node-server
 * The "plain node" reference: what someone would write with node:http and node:fs
 * alone, doing the same file work as filegate without its layers (no worker pool,
 * no tokens, no path policy). Run as its own process:
 *
 *   node --import tsx bench/ref/node-server.ts --root DIR [--port 0]
 *
 * It prints one JSON line `{"msg":"listening","port":N}` once it listens on 127.0.0.1.
 *
 * Routes (path= is relative to --root):
 *   GET  /file?path=   fs.createReadStream (highWaterMark 1 MiB) piped into the response
 *   POST /upload?path= the request piped into fs.createWriteStream
 *   GET  /ls?path=     readdir + stat of every entry → JSON
 *   GET  /cat?path=    readFile → the bytes
 *   POST /session      JSON body → a random token in JSON
 */
import { randomBytes } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { readFile, readdir, stat } from 'node:fs/promises'
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http'
import { join, normalize } from 'node:path'
import { pipeline } from 'node:stream/promises'

function arg(name: string, dflt?: string): string {
  const i = process.argv.indexOf(name)
  const v = i >= 0 ? process.argv[i + 1] : dflt
  if (v === undefined) throw new Error(`missing ${name}`)
  return v
}

const root = arg('--root')
const port = Number(arg('--port', '0'))
const HWM = 1024 * 1024

const inRoot = (p: string | null): string => join(root, normalize(`/${p ?? ''}`))

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
  res.end(text)
}

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = []
  for await (const c of req) parts.push(c as Buffer)
  return Buffer.concat(parts).toString('utf8')
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://x')
  const path = url.searchParams.get('path')
  switch (`${req.method} ${url.pathname}`) {
    case 'GET /file': {
      const file = inRoot(path)
      const st = await stat(file)
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': st.size })
      await pipeline(createReadStream(file, { highWaterMark: HWM }), res)
      return
    }
    case 'POST /upload': {
      const file = inRoot(path)
      await pipeline(req, createWriteStream(file))
      return json(res, 200, { status: 'ok', size: (await stat(file)).size })
    }
    case 'GET /ls': {
      const dir = inRoot(path)
      const ents = await readdir(dir, { withFileTypes: true })
      const results = await Promise.all(
        ents.map(async (e) => {
          const st = await stat(join(dir, e.name))
          return { name: e.name, type: st.isDirectory() ? 'directory' : 'file', size: st.isDirectory() ? 0 : st.size, time: Math.floor(st.mtimeMs) }
        }),
      )
      results.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      return json(res, 200, { status: 'ok', results })
    }
    case 'GET /cat': {
      const bytes = await readFile(inRoot(path))
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': bytes.length })
      res.end(bytes)
      return
    }
    case 'POST /session': {
      const body = JSON.parse(await readBody(req)) as { type?: string; userID?: string }
      if (body.type !== 'tmp' || typeof body.userID !== 'string') return json(res, 400, { status: 'error', code: 'INVALID_INPUT' })
      return json(res, 200, { status: 'ok', result: { home: '/', is_authenticated: true, authorization: randomBytes(32).toString('base64url') } })
    }
    default:
      return json(res, 404, { status: 'error', code: 'NOT_FOUND' })
  }
}

const server = createServer((req, res) => {
  handle(req, res).catch((err: unknown) => {
    if (!res.headersSent) json(res, 500, { status: 'error', message: String(err) })
    else res.destroy()
  })
})
server.keepAliveTimeout = 60_000
server.listen(port, '127.0.0.1', () => {
  const addr = server.address()
  console.log(JSON.stringify({ msg: 'listening', port: typeof addr === 'object' && addr ? addr.port : port }))
})
const stopNow = () => {
  server.close(() => process.exit(0))
  server.closeAllConnections()
}
process.on('SIGTERM', stopNow)
process.on('SIGINT', stopNow)
