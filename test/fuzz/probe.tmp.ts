import { startWorld } from './world.js'
import { raw } from './raw-http.js'
const w = await startWorld()
const show = (a: any) => console.log(a && a.status, a && JSON.stringify(Object.fromEntries(a.headers)), a && a.body.toString().slice(0, 300))
for (const m of ['GET', 'HEAD']) for (const q of ['', '?path']) for (const h of [{}, { authorization: 'Bearer \xff' }])
  show(await raw(w.url, m, '/.well-known/oauth-authorization-server' + q, h))
show(await raw(w.url, 'GET', '/api/files/ls?path=/', { authorization: 'Bearer \xff' }))
await w.close(); process.exit(0)
