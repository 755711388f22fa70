'use strict'
// The end-to-end test's players: mineflayer bots on the test server. Reads
// one JSON command a line on stdin and writes one JSON object a line on
// stdout (everything else goes to stderr):
//
//   {"cmd":"rtp","rounds":n}  every bot runs /rtp n times, one after the
//       other; each teleport is reported as {"event":"teleport",...}: the
//       place, the time from the command to standing on the ground
//       (landMs), the damage taken and any fluid met in the 5 s after,
//       or the message the plugin answered instead. Then {"event":"done"}.
//   {"cmd":"lava","places":[[x,y,z],...]}  the first bot turns the block
//       under each place to lava, then {"event":"done"} once the server has
//       run every command.
//   {"cmd":"party","size":n}  the first n bots form a party (the first
//       invites, the others accept), then the first types /rtp party;
//       each member's teleport is reported as for rtp, with "party":
//       true, then {"event":"done"}.
//
// Environment: MC_PORT, MC_VERSION, BOTS (how many); RTP_E2E_NO_SETTLE=1
// makes a bot ready at its spawn rather than once its spawn area has
// arrived, so the first teleports come while the last bots' spawn areas
// still stream in (what placeNewPlayers meets; the test run by CI does
// not set it).

const readline = require('readline')
const mineflayer = require('mineflayer')

const out = (o) => process.stdout.write(JSON.stringify(o) + '\n')
console.log = (...a) => process.stderr.write(a.join(' ') + '\n')

const port = Number(process.env.MC_PORT)
const version = process.env.MC_VERSION || '1.21.1'
const count = Number(process.env.BOTS || 20)
const LAND_MS = 5000
const WATCH_MS = 5000
const REPLY_MS = 15000
const BUSY_MS = 10000
const QUIET_MS = 500

// connect joins bot i and resolves once it has settled: the chunk it
// stands in has arrived, and the server has stopped sending its spawn
// area (no chunk for QUIET_MS). A bot teleported while it still falls
// to the ground and its spawn area streams in measures the join rather
// than the teleport: the last bot to join once never stood on the ground
// after its first teleport. (Teleporting a player who has just joined is
// left to the plugin's own landing check, which cancels one that does
// not land.)
function connect (i) {
  return new Promise((resolve, reject) => {
    const bot = mineflayer.createBot({ host: '127.0.0.1', port, username: 'bot' + i, version, auth: 'offline' })
    bot.once('spawn', async () => {
      if (process.env.RTP_E2E_NO_SETTLE === '1') {
        resolve(bot)
        return
      }
      const here = () => (bot.world.getColumnAt(bot.entity.position) ? { ok: true } : null)
      if (!here() && (await until(bot, REPLY_MS, { chunkColumnLoad: here })).timeout) {
        reject(new Error(`bot${i}: the chunk it spawned in did not arrive in ${REPLY_MS / 1000} s`))
        return
      }
      const deadline = Date.now() + REPLY_MS
      while (Date.now() < deadline && !(await until(bot, QUIET_MS, { chunkColumnLoad: () => ({ loaded: true }) })).timeout) {
        // a chunk came: wait for QUIET_MS more without one
      }
      resolve(bot)
    })
    bot.once('kicked', (r) => reject(new Error(`bot${i} kicked: ${JSON.stringify(r)}`)))
    bot.once('error', reject)
    bot.on('messagestr', (m) => { bot.lastMessages = [...(bot.lastMessages || []).slice(-20), m] })
  })
}

const fluidAt = (bot) => {
  const p = bot.entity.position
  for (const dy of [0, 1]) {
    const b = bot.blockAt(p.offset(0, dy, 0))
    if (b && (b.name === 'water' || b.name === 'lava')) return b.name
  }
  if (bot.entity.isInWater) return 'water'
  if (bot.entity.isInLava) return 'lava'
  return ''
}

// once waits for the first of the bot's events that pass, or a timeout.
function until (bot, ms, handlers) {
  return new Promise(resolve => {
    const off = []
    const timer = setTimeout(() => finish({ timeout: true }), ms)
    function finish (v) {
      clearTimeout(timer)
      for (const [ev, fn] of off) bot.removeListener(ev, fn)
      resolve(v)
    }
    for (const [ev, test] of Object.entries(handlers)) {
      const fn = (...a) => { const v = test(...a); if (v) finish(v) }
      off.push([ev, fn])
      bot.on(ev, fn)
    }
  })
}

// rtpOnce runs one /rtp and reports what the bot saw. A player whose
// previous teleport the plugin has not completed yet (it completes once the
// server, not only the client, sees the player on the ground) is told the
// teleport is on its way: the bot asks again, for at most BUSY_MS.
async function rtpOnce (bot, round) {
  const deadline = Date.now() + BUSY_MS
  for (;;) {
    const r = await rtpAttempt(bot, round)
    if (!/already on its way/i.test(r.message || '') || Date.now() > deadline) return r
    await new Promise(resolve => setTimeout(resolve, 250))
  }
}

// rtpAttempt runs /rtp once.
async function rtpAttempt (bot, round) {
  const w = watchTeleport(bot)
  bot.chat('/rtp')
  return settle(bot, round, w)
}

// watchTeleport starts watching bot for the teleport a command is about
// to cause: a forced move away from where it stands, or the message the
// plugin answers instead.
function watchTeleport (bot) {
  const from = bot.entity.position.clone()
  return {
    t0: Date.now(),
    moved: until(bot, REPLY_MS, {
      forcedMove: () => (bot.entity.position.distanceTo(from) > 2 ? { moved: true } : null),
      messagestr: (m) => (/try again|may not|no region|already|no party|too large/i.test(m) ? { message: m } : null)
    })
  }
}

// settle reports what bot saw of the teleport w watches: where it landed,
// how long after the command it stood on the ground, the damage taken and
// any fluid met in the WATCH_MS after.
async function settle (bot, round, w) {
  const r = { event: 'teleport', bot: bot.username, round }
  const first = await w.moved
  if (first.timeout) return { ...r, error: 'no teleport and no message in 15 s' }
  if (first.message) return { ...r, message: first.message }
  const target = bot.entity.position.clone()
  r.x = target.x; r.y = target.y; r.z = target.z
  const near = () => Math.abs(bot.entity.position.x - target.x) < 1.5 && Math.abs(bot.entity.position.z - target.z) < 1.5
  if (!(bot.entity.onGround && near())) {
    const landed = await until(bot, LAND_MS, { physicsTick: () => (bot.entity.onGround && near() ? { ok: true } : null) })
    if (landed.timeout) return { ...r, onGround: false, landMs: Date.now() - w.t0, error: 'not on the ground within 5 s' }
  }
  r.onGround = true
  r.landMs = Date.now() - w.t0
  r.ground = bot.blockAt(bot.entity.position.offset(0, -0.5, 0))?.name || ''
  const health = bot.health
  let minHealth = health
  let fluid = fluidAt(bot)
  const onHealth = () => { minHealth = Math.min(minHealth, bot.health) }
  const onTick = () => { fluid = fluid || fluidAt(bot) }
  bot.on('health', onHealth)
  bot.on('physicsTick', onTick)
  await new Promise(resolve => setTimeout(resolve, WATCH_MS))
  bot.removeListener('health', onHealth)
  bot.removeListener('physicsTick', onTick)
  r.damage = health - minHealth
  r.fluid = fluid
  return r
}

// command has bot type cmd and resolves to the first message matching
// want, or throws after REPLY_MS.
async function command (bot, cmd, want) {
  const reply = until(bot, REPLY_MS, { messagestr: (m) => (want.test(m) ? { message: m } : null) })
  bot.chat(cmd)
  const r = await reply
  if (r.timeout) throw new Error(`${bot.username}: no answer matching ${want} to ${cmd}`)
  return r.message
}

// party forms a party of members (the first leads: it invites each, who
// accepts), has the leader type /rtp party, and reports every member's
// teleport.
async function party (members) {
  const [leader, ...rest] = members
  for (const b of rest) {
    const invited = until(b, REPLY_MS, { messagestr: (m) => (/invites you/.test(m) ? { ok: true } : null) })
    await command(leader, `/party invite ${b.username}`, /You invited/)
    if ((await invited).timeout) throw new Error(`${b.username} got no invitation`)
    await command(b, '/party accept', /You joined the party/)
  }
  const list = await command(leader, '/party list', /Party: /)
  out({ event: 'party', members: list.slice(list.indexOf('Party: ') + 7).split(', ') })
  const ws = members.map(b => watchTeleport(b))
  leader.chat('/rtp party')
  const rs = await Promise.all(members.map((b, i) => settle(b, 0, ws[i])))
  for (const r of rs) out({ ...r, party: true })
  for (const b of members) await command(b, '/party leave', /left the party|no party/)
}

async function main () {
  const bots = []
  for (let i = 0; i < count; i += 5) {
    bots.push(...await Promise.all(Array.from({ length: Math.min(5, count - i) }, (_, k) => connect(i + k))))
  }
  out({ event: 'ready', bots: bots.length })
  const rl = readline.createInterface({ input: process.stdin })
  for await (const line of rl) {
    let cmd
    try { cmd = JSON.parse(line) } catch { continue }
    if (cmd.cmd === 'rtp') {
      await Promise.all(bots.map(async bot => {
        for (let round = 0; round < cmd.rounds; round++) {
          const r = await rtpOnce(bot, round)
          out(r)
          if (r.error) break
        }
      }))
    } else if (cmd.cmd === 'party') {
      try {
        await party(bots.slice(0, cmd.size))
      } catch (err) {
        out({ event: 'error', error: String(err && err.message) })
      }
    } else if (cmd.cmd === 'lava') {
      const bot = bots[0]
      for (const [x, y, z] of cmd.places) bot.chat(`/setblock ${x} ${y - 1} ${z} lava`)
      const pong = until(bot, REPLY_MS, { messagestr: (m) => (m.startsWith('pong') ? { ok: true } : null) })
      bot.chat('/ping')
      if ((await pong).timeout) out({ event: 'error', error: 'no pong after the lava' })
    }
    out({ event: 'done', cmd: cmd.cmd })
  }
  for (const b of bots) b.quit()
}

main().catch(err => {
  out({ event: 'error', error: String(err && err.stack) })
  process.exit(1)
})
