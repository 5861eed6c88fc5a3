// Part of `npm run build`: the web file manager's static files (front/web/: HTML, CSS,
// plain ES modules, no bundler) go next to the compiled routes, in dist/front/web/,
// so that dist/ serves them wherever it is copied (front/routes/web.ts reads ../web/).
import { cpSync, rmSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const from = fileURLToPath(new URL('../front/web/', import.meta.url))
const to = fileURLToPath(new URL('../dist/front/web/', import.meta.url))
rmSync(to, { recursive: true, force: true })
cpSync(from, to, { recursive: true })
