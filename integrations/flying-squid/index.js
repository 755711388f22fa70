'use strict'
// rtp-flying-squid: a flying-squid plugin that serves /rtp from the rtp
// random-teleport service, teleports parties together (/party, /rtp
// party: one group teleport, every member within the region's group
// radius of the group's centre), reports joins and quits (the login
// reserve), can place first-time players, and reports changed chunks so
// that rtp never hands out ground a player changed before the server
// saved it. docs/integrations.md in the rtp repository describes the
// calls.
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
const { Parties } = require('./lib/party')
const { sendChunksAround } = require('./lib/chunks')
const { ignoreStaleMoves } = require('./lib/stale')

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
    parties: new Parties({ maxSize: cfg.partySize, inviteMs: cfg.inviteMs }),
    stats: { served: 0, landed: 0, cancelled: 0, failed: 0, parties: 0 }
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

  // failure tells a player why rtp served no place (err from the client).
  const failure = (player, err, region) => {
    if (err.kind === 'no-location') tell(player, cfg.messages.noPlace)
    else if (err.code === 'unknown-region') tell(player, cfg.messages.unknownRegion, { region })
    else if (err.code === 'group-too-large') tell(player, cfg.messages.partyTooLarge)
    else if (err.code === 'sink-disabled') tell(player, cfg.messages.unavailable)
    else tell(player, cfg.messages.unavailable)
  }

  // deliver moves player to loc, a place rtp handed out, waits for the
  // landing, and completes the place (or cancels it when the player left
  // or did not land). t is the player's entry in rtp.active. It never
  // throws; it resolves true once the player stands there.
  const deliver = async (player, loc, t) => {
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
    // Until the client reports a position at the place, what it reports
    // from elsewhere was sent before it saw the teleport.
    const endHold = ignoreStaleMoves(player, x, z)
    try {
      await player.teleport(new Vec3(x, y, z))
      sendChunksAround(serv, player, x, z)
    } catch (err) {
      warn(`rtp: teleporting ${player.username} failed: ${err.message}`)
    }
    const ok = await landed
    endHold()
    if (!ok) {
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
    serv.emit('rtpLanded', player, loc, Date.now() - t.started)
    return true
  }

  // teleport runs one teleport of player through rtp: ask, move, wait for
  // the landing, complete (or cancel). It never throws.
  rtp.teleport = async (player, region, sink) => {
    const name = player.username
    const t = { region, started: Date.now() }
    rtp.active.set(name, t)
    try {
      let loc
      try {
        loc = await client.teleport(region, name, sink)
      } catch (err) {
        rtp.stats.failed++
        if (err.kind === 'rejected') warn(err.message)
        failure(player, err, region)
        return false
      }
      if (!(await deliver(player, loc, t))) return false
      tell(player, cfg.messages.done, { x: loc.x, y: Math.floor(loc.standY), z: loc.z })
      return true
    } finally {
      rtp.active.delete(name)
    }
  }

  // teleportParty teleports the party of player together: one group
  // teleport for its members online, each then moved, landed and its
  // place completed (or cancelled) on its own. It resolves to the
  // members who landed; it never throws.
  rtp.teleportParty = async (player, region) => {
    const names = rtp.parties.members(player.username)
    if (names.length === 0) {
      tell(player, cfg.messages.partyNone)
      return []
    }
    const members = names.map(n => serv.getPlayer(n)).filter(p => p && !p.disconnected)
    const busy = members.find(m => rtp.active.has(m.username))
    if (busy) {
      tell(player, cfg.messages.partyBusy, { player: busy.username })
      return []
    }
    const started = Date.now()
    const ts = members.map(m => {
      const t = { region, started, party: true }
      rtp.active.set(m.username, t)
      return t
    })
    try {
      let res
      try {
        res = await client.groupTeleport(region, members.map(m => m.username))
      } catch (err) {
        rtp.stats.failed++
        if (err.kind === 'rejected' && err.code !== 'group-too-large') warn(err.message)
        for (const m of members) failure(m, err, region)
        return []
      }
      rtp.stats.parties++
      const byName = new Map(res.locations.map(l => [l.player, l]))
      const landed = await Promise.all(members.map((m, i) => {
        const loc = byName.get(m.username)
        return loc ? deliver(m, loc, ts[i]) : false
      }))
      const cx = res.locations.reduce((a, l) => a + l.x, 0) / res.locations.length
      const cz = res.locations.reduce((a, l) => a + l.z, 0) / res.locations.length
      const out = members.filter((m, i) => landed[i])
      for (const m of out) tell(m, cfg.messages.partyDone, { x: Math.round(cx), z: Math.round(cz) })
      serv.emit('rtpPartyLanded', out, res.locations, Date.now() - started)
      return out
    } finally {
      for (const m of members) rtp.active.delete(m.username)
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
    info: 'teleport to a random safe place; /rtp party takes your party along',
    usage: '/rtp [region] | /rtp party',
    onlyPlayer: true,
    action (arg, ctx) {
      const player = ctx.player
      const region = String(arg || '').trim()
      if (cfg.permission === 'op' && !player.op) return cfg.messages.denied
      if (region === 'party') {
        // The whole party lands within the group radius of its centre;
        // every member's cooldown applies, and starts again on landing.
        const now = Date.now()
        for (const name of rtp.parties.members(player.username)) {
          const last = rtp.cooldown.get(name)
          const left = last === undefined ? 0 : last + cfg.cooldownMs - now
          if (left > 0) return format(cfg.messages.cooldown, { seconds: Math.ceil(left / 1000) })
        }
        rtp.teleportParty(player, rtp.regionOf(player.world)).then(landed => {
          for (const m of landed) rtp.cooldown.set(m.username, Date.now())
        })
        return
      }
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
  // /party: invite, accept, leave, list. A party is what /rtp party
  // teleports together. What went as asked is told; a refusal is the
  // command's answer (flying-squid shows it in red).
  serv.commands.add({
    base: 'party',
    info: 'form a party that /rtp party teleports together',
    usage: '/party invite <player> | accept | leave | list',
    onlyPlayer: true,
    action (arg, ctx) {
      const player = ctx.player
      const me = player.username
      const [verb = '', who = ''] = String(arg || '').trim().split(/\s+/)
      const m = cfg.messages
      switch (verb) {
        case 'invite': {
          const target = who && serv.getPlayer(who)
          if (!target) return format(m.partyOffline, { player: who })
          const r = rtp.parties.invite(me, target.username)
          if (!r.ok) return partyRefusal(r, target.username)
          tell(target, m.partyInvite, { player: me })
          tell(player, m.partyInvited, { player: target.username })
          return
        }
        case 'accept': {
          const r = rtp.parties.accept(me)
          if (!r.ok) return partyRefusal(r, me)
          for (const name of r.members) {
            const p = name !== me && serv.getPlayer(name)
            if (p) tell(p, m.partyMemberJoined, { player: me })
          }
          tell(player, m.partyJoined, { player: r.leader })
          return
        }
        case 'leave':
          if (!leaveParty(player)) return m.partyNone
          tell(player, m.partyLeft)
          return
        case 'list': {
          const members = rtp.parties.members(me)
          if (!members.length) return m.partyNone
          tell(player, m.partyList, { members: members.join(', ') })
          return
        }
      }
      return m.partyUsage
    }
  })

  // partyRefusal is the message of a party change refused (r from
  // Parties), about player.
  const partyRefusal = (r, player) => {
    const m = cfg.messages
    switch (r.why) {
      case 'self': return m.partySelf
      case 'not-leader': return format(m.partyNotLeader, { player: r.leader })
      case 'taken': return format(m.partyTaken, { player })
      case 'full': return format(m.partyFull, { max: r.max })
      case 'no-invite': return m.partyNoInvite
    }
    return m.partyNone
  }

  // leaveParty takes player out of their party, telling the members left.
  const leaveParty = (player) => {
    const r = rtp.parties.leave(player.username)
    if (!r.ok) return false
    for (const name of r.left) {
      const p = serv.getPlayer(name)
      if (p) tell(p, cfg.messages.partyMemberLeft, { player: player.username })
    }
    return true
  }
  rtp.leaveParty = leaveParty

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
    rtp.leaveParty(player)
    if (!region) return
    rtp.client.quit(region, player.username).catch(err => {
      if (err.code !== 'sink-disabled') serv.warn?.(`rtp: reporting ${player.username} quit failed: ${err.message}`)
    })
  })
}

module.exports.config = config
