/**
 * The uWebSockets.js package silently falls back to a slow JS emulation when its
 * native binary does not load. The service must run on the native build here.
 */
import t from 'tap'
import { loadUws } from '../../front/http/uws.js'

t.test('the loaded uWebSockets.js is the native build', async (t) => {
  const { uws, info } = loadUws()
  t.ok(String(uws.App).includes('[native code]'), 'uWS.App is a native function')
  t.equal(info.native, true, 'and filegate reports it as native')
  t.match(info.version, /uws/i, 'with the package it came from')
})
