/**
 * `plugins` in the configuration (core/config.ts): a built-in's name, or
 * `{"name", "path", "options"}` for options and third-party modules. Checked precisely.
 */
import t from 'tap'
import { validateConfig } from '../../core/config.js'
import { loadConfig } from '../../front/config-load.js'

t.test('accepted forms, normalised', async (t) => {
  t.strictSame(validateConfig({}).plugins, [], 'none by default')
  t.strictSame(validateConfig({ plugins: ['plg_image_ascii'] }).plugins, [{ name: 'plg_image_ascii', options: {} }], 'a name')
  t.strictSame(
    validateConfig({ plugins: ['plg_image_ascii', { name: 'plg_x', path: '/opt/plg_x/index.js', options: { a: 1 } }, { name: 'plg_y', options: { b: true } }] }).plugins,
    [
      { name: 'plg_image_ascii', options: {} },
      { name: 'plg_x', path: '/opt/plg_x/index.js', options: { a: 1 } },
      { name: 'plg_y', options: { b: true } },
    ],
    'names and objects, in order',
  )
  const env = loadConfig([], { FILEGATE_PLUGINS: '["plg_image_ascii",{"name":"plg_x","path":"/p/x.js"}]' })
  t.strictSame(env.plugins, [{ name: 'plg_image_ascii', options: {} }, { name: 'plg_x', path: '/p/x.js', options: {} }], 'FILEGATE_PLUGINS (JSON)')
})

t.test('refused, with a message that says what to fix', async (t) => {
  const bad: [unknown, RegExp][] = [
    ['plg_image_ascii', /plugins must be a list/],
    [[42], /plugins\[0\] must be a plugin name or a \{"name", "path", "options"\} object/],
    [[['plg_a']], /plugins\[0\] must be a plugin name/],
    [[null], /plugins\[0\] must be a plugin name/],
    [['Plg_Upper'], /plugins\[0\]: the name must be 1 to 64 of a-z, 0-9 and "_", starting with a letter \(got "Plg_Upper"\)/],
    [['plg-dash'], /the name must be/],
    [[''], /the name must be/],
    [['a'.repeat(65)], /the name must be/],
    [[{ path: '/x.js' }], /plugins\[0\]: the name must be/],
    [['plg_a', { name: 'plg_a', path: '/x.js' }], /plugins\[1\]: plugin "plg_a" is enabled twice/],
    [[{ name: 'plg_a', path: 'plugins/a.js' }], /plugins\[0\]: "path" must be the absolute path of the plugin's module \(got "plugins\/a.js"\)/],
    [[{ name: 'plg_a', path: 7 }], /"path" must be the absolute path/],
    [[{ name: 'plg_a', options: [] }], /plugins\[0\]: "options" must be an object/],
    [[{ name: 'plg_a', options: 'x' }], /"options" must be an object/],
    [[{ name: 'plg_a', enabled: true }], /plugins\[0\]: unknown key "enabled" \(known: name, path, options\)/],
  ]
  for (const [plugins, message] of bad) t.throws(() => validateConfig({ plugins }), { name: 'ConfigError', message }, JSON.stringify(plugins))
})
