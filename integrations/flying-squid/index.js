'use strict'
// rtp-flying-squid: a flying-squid plugin that serves /rtp from the rtp
// random-teleport service, reports joins and quits (the login reserve),
// can place first-time players, and reports changed chunks so that rtp
// never hands out ground a player changed before the server saved it.
// docs/integrations.md in the rtp repository describes the calls.
//
// Nothing here blocks the server's tick: every call to rtp is a promise
// with a timeout, and a player whom rtp cannot serve reads a message
// (config.messages), never a stack trace.

const fs = require('fs')
const path = require('path')
const { Vec3 } = require('vec3')
const config = require('./lib/config')
const { Client } = require('./lib/client')
const { ChangeReporter } = require('./lib/changes')

function worldName (serv, world) {
  if (world === serv.overworld) return 'overworld'
  if (world === serv.netherworld) return 'nether'
  return ''
}

function format (msg, vars) {
  return msg.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m))
}

// onGroundOf reads the on-ground flag of a movement packet (a boolean
// before 1.21.2, a flags field after).
function onGroundOf (p) {
  if (typeof p.onGround === 'boolean') return p.onGround
  if (p.flags && typeof p.flags === 'object') return Boolean(p.flags.onGround)
  if (typeof p.flags === 'number') return (p.flags & 1) !== 0
  return false
}

// sendChunksAround sends a teleported player the chunks around them.
// flying-squid sends chunks when a player moves (the move event comes
// before the position changes, so a teleport sends none) and a client
// with no chunk under it does not move: the plugin sends them itself,
// after moving the client's view centre there (1.14 and later).
function sendChunksAround (serv, player, x, z) {
  if (serv.supportFeature('updateViewPosition')) {
    player._client.write('update_view_position', { chunkX: Math.floor(x / 16), chunkZ: Math.floor(z / 16) })
  }
  player.worldSendRestOfChunks().catch(err => serv.warn?.(`rtp: sending chunks to ${player.username} failed: ${err.message}`))
}

module.exports.server = function (serv, settings) {
  const own = (this && this.settings) || {}
  let cfg
  try {
    cfg = config.load(own)
  } catch (err) {
    serv.err ? serv.err(err.message) : console.error(err.message)
    return
  }
  const log = (msg) => (serv.info ? serv.info(msg) : console.log(msg))
  const warn = (msg) => (serv.warn ? serv.warn(msg) : console.warn(msg))
  const client = new Client(cfg)
  const rtp = {
    cfg,
    client,
    cooldown: new Map(), // username -> time of the last /rtp served
    active: new Map(), // username -> the teleport in flight
    reporters: {},
    stats: { served: 0, landed: 0, cancelled: 0, failed: 0 }
  }
  serv.rtp = rtp
  rtp.worldFolder = settings.worldFolder || ''
  rtp.regionOf = (world) => cfg.regions[worldName(serv, world)] || cfg.region

  // Changed chunks, per world that has an rtp world. The worlds exist
  // once flying-squid's own plugins are ready.
  const watchWorlds = () => {
    for (const [name, world] of [['overworld', serv.overworld], ['nether', serv.netherworld]]) {
      const rtpWorld = cfg.worlds[name]
      if (!rtpWorld || !world || rtp.reporters[name]) continue
      const rep = new ChangeReporter(client, rtpWorld, cfg.batchMs, warn)
      rtp.reporters[name] = rep
      world.on('blockUpdate', (oldBlock, newBlock) => {
        const pos = (newBlock && newBlock.position) || (oldBlock && oldBlock.position)
        if (pos) rep.add(pos.x, pos.z)
      })
      world.on('doneSaving', () => rep.saved())
    }
  }
  if (serv.pluginsReady) watchWorlds()
  else serv.once('pluginsReady', watchWorlds)
  serv.on('close', () => { for (const r of Object.values(rtp.reporters)) r.close() })

  // tell sends a player a message, unless they left.
  const tell = (player, msg, vars = {}) => {
    if (!player.disconnected) player.chat(format(msg, vars))
  }

  // land resolves true once the player stands on the ground at (x, y, z)
  // with the chunk loaded, false if they leave or landTimeoutMs passes.
  const land = (player, x, y, z) => new Promise(resolve => {
    const key = Math.floor(x / 16) + ',' + Math.floor(z / 16)
    let done = false
    const finish = (ok) => {
      if (done) return
      done = true
      clearTimeout(timer)
      player._client.removeListener('position', onMove)
      player._client.removeListener('position_look', onMove)
      player._client.removeListener('flying', onMove)
      player.removeListener('disconnected', onQuit)
      resolve(ok)
    }
    // A client standing still sends only its on-ground flag (the flying
    // packet): its position is then the last one the server knows.
    const onMove = (p) => {
      const at = typeof p.x === 'number' ? p : player.position
      if (Math.abs(at.x - x) < 1.5 && Math.abs(at.z - z) < 1.5 && Math.abs(at.y - y) < 1.5 &&
          onGroundOf(p) && player.loadedChunks && player.loadedChunks[key] !== undefined) finish(true)
    }
    const onQuit = () => finish(false)
    const timer = setTimeout(() => finish(false), cfg.landTimeoutMs)
    player._client.on('position', onMove)
    player._client.on('position_look', onMove)
    player._client.on('flying', onMove)
    player.once('disconnected', onQuit)
  })

  // teleport runs one teleport of player through rtp: ask, move, wait for
  // the landing, complete (or cancel). It never throws.
  rtp.teleport = async (player, region, sink) => {
    const name = player.username
    const t = { region, started: Date.now() }
    rtp.active.set(name, t)
    let loc
    try {
      try {
        loc = await client.teleport(region, name, sink)
      } catch (err) {
        rtp.stats.failed++
        if (err.kind === 'no-location') tell(player, cfg.messages.noPlace)
        else if (err.code === 'unknown-region') tell(player, cfg.messages.unknownRegion, { region })
        else {
          if (err.kind === 'rejected') warn(err.message)
          tell(player, cfg.messages.unavailable)
        }
        return false
      }
      t.id = loc.id
      rtp.stats.served++
      const x = loc.x + 0.5
      const z = loc.z + 0.5
      const y = loc.standY
      if (player.disconnected) {
        await cancel(loc.id)
        return false
      }
      const landed = land(player, x, y, z)
      try {
        await player.teleport(new Vec3(x, y, z))
        sendChunksAround(serv, player, x, z)
      } catch (err) {
        warn(`rtp: teleporting ${name} failed: ${err.message}`)
      }
      if (!(await landed)) {
        await cancel(loc.id)
        tell(player, cfg.messages.failed)
        return false
      }
      rtp.stats.landed++
      try {
        await client.complete(loc.id)
      } catch (err) {
        warn(`rtp: completing teleport ${loc.id} failed: ${err.message}`)
      }
      tell(player, cfg.messages.done, { x: loc.x, y: Math.floor(y), z: loc.z })
      serv.emit('rtpLanded', player, loc, Date.now() - t.started)
      return true
    } finally {
      rtp.active.delete(name)
    }
  }

  const cancel = async (id) => {
    rtp.stats.cancelled++
    try {
      await client.cancel(id)
    } catch (err) {
      if (err.code !== 'unknown-id') warn(`rtp: cancelling teleport ${id} failed: ${err.message}`)
    }
  }

  serv.commands.add({
    base: 'rtp',
    info: 'teleport to a random safe place',
    usage: '/rtp [region]',
    onlyPlayer: true,
    action (arg, ctx) {
      const player = ctx.player
      const region = String(arg || '').trim()
      if (cfg.permission === 'op' && !player.op) return cfg.messages.denied
      if (region && cfg.regionPermission === 'op' && !player.op) return cfg.messages.denied
      if (rtp.active.has(player.username)) return cfg.messages.busy
      const last = rtp.cooldown.get(player.username)
      const left = last === undefined ? 0 : last + cfg.cooldownMs - Date.now()
      if (left > 0) return format(cfg.messages.cooldown, { seconds: Math.ceil(left / 1000) })
      // The work goes on after the command returns: the tick never waits.
      rtp.teleport(player, region || rtp.regionOf(player.world)).then(ok => {
        if (ok) rtp.cooldown.set(player.username, Date.now())
      })
    }
  })
  log(`rtp: using ${cfg.url}${cfg.token ? ' with a token' : ''}; /rtp on region ${cfg.region}`)
}

module.exports.player = function (player, serv) {
  const rtp = serv.rtp
  if (!rtp) return
  let region = ''
  player.on('spawned', () => {
    // flying-squid writes a player's data when they leave: none yet is a
    // first join.
    let firstJoin = false
    if (rtp.worldFolder && player.uuid) {
      firstJoin = !fs.existsSync(path.join(rtp.worldFolder, 'playerdata', player.uuid + '.dat'))
    }
    region = rtp.regionOf(player.world)
    rtp.client.join(region, player.username).catch(err => {
      if (err.code !== 'sink-disabled') serv.warn?.(`rtp: reporting ${player.username} joined failed: ${err.message}`)
    })
    if (firstJoin && rtp.cfg.placeNewPlayers) rtp.teleport(player, region, 'login')
  })
  player.on('disconnected', () => {
    if (!region) return
    rtp.client.quit(region, player.username).catch(err => {
      if (err.code !== 'sink-disabled') serv.warn?.(`rtp: reporting ${player.username} quit failed: ${err.message}`)
    })
  })
}

module.exports.config = config
