'use strict'
// The end-to-end test's Minecraft server: flying-squid with the rtp plugin
// on a fresh world. It generates the chunks around the origin, saves them,
// then saves only when told ("save" on stdin), as a vanilla server saves
// every few minutes. It writes one JSON object a line on stdout: {"event":
// "ready"}, {"event": "tick", "count": n} for "tick" on stdin, {"event":
// "saved"}; everything else goes to stderr.
//
// Environment: MC_PORT, MC_WORLD (the save folder), MC_VERSION, MC_PREGEN
// (chunks each side of the origin), MC_GENERATION (superflat or
// diamond_square); RTP_URL, RTP_WORLD and the plugin's other variables.

const path = require('path')
const readline = require('readline')
const mcServer = require('flying-squid')

const out = (o) => process.stdout.write(JSON.stringify(o) + '\n')
console.log = (...a) => process.stderr.write(a.join(' ') + '\n')
// An exception thrown by a listener of the server's tick would end its
// tick interval without a word: say so on stderr.
process.on('uncaughtException', e => process.stderr.write('uncaught exception: ' + (e && e.stack) + '\n'))

const pregen = Number(process.env.MC_PREGEN || 8)
const plugin = path.resolve(__dirname, '..')
const serv = mcServer.createMCServer({
  motd: 'rtp end-to-end test',
  port: Number(process.env.MC_PORT || 25565),
  'max-players': 64,
  'online-mode': false,
  logging: false,
  gameMode: 0,
  difficulty: 0,
  worldFolder: process.env.MC_WORLD,
  generation: { name: process.env.MC_GENERATION || 'diamond_square', options: { worldHeight: 80, seed: 7 } },
  kickTimeout: 30000,
  // timeoutMs: on a machine loaded by other tests rtp may answer late;
  // the plugin's own timeouts are the unit tests' business.
  plugins: { [plugin]: { cooldownMs: 0, regionPermission: 'all', landTimeoutMs: 8000, timeoutMs: 15000 } },
  modpe: false,
  'view-distance': 2,
  'player-list-text': { header: { text: '' }, footer: { text: '' } },
  'everybody-op': true,
  'max-entities': 100,
  version: process.env.MC_VERSION || '1.21.1'
})

serv.on('error', err => process.stderr.write('server error: ' + (err && err.stack) + '\n'))

serv.once('ready', async () => {
  const world = serv.overworld
  const loads = []
  for (let x = -pregen; x < pregen; x++) {
    for (let z = -pregen; z < pregen; z++) loads.push(world.getColumn(x, z))
  }
  await Promise.all(loads)
  // prismarine-world queues every generated column for saving.
  await world.saveNow()
  world.stopSaving()
  out({ event: 'ready', port: serv.listeningPort })
})

readline.createInterface({ input: process.stdin }).on('line', async (line) => {
  const cmd = line.trim()
  if (cmd === 'tick') out({ event: 'tick', count: serv.tickCount })
  if (cmd === 'save') {
    await serv.overworld.saveNow()
    out({ event: 'saved' })
  }
  if (cmd === 'stats') out({ event: 'stats', stats: serv.rtp.stats })
}).on('close', () => process.exit(0))
