'use strict'
// Configuration of the rtp plugin: the plugin's entry in flying-squid's
// settings ("plugins": {"rtp-flying-squid": {...}}), then a JSON file
// (settings.configFile or RTP_CONFIG), then the environment (RTP_URL,
// RTP_TOKEN, RTP_TOKEN_FILE, RTP_REGION, RTP_COOLDOWN_MS, RTP_PERMISSION),
// each overriding the one before.

const fs = require('fs')

const defaults = Object.freeze({
  // url is the rtp service's base URL.
  url: 'http://127.0.0.1:8080',
  // token is the admin token (auth.token_file of rtp serve), or '' when
  // rtp runs without one; tokenFile reads it from a file instead.
  token: '',
  tokenFile: '',
  // regions maps a flying-squid world (overworld, nether) to the rtp
  // region /rtp uses there; region is the one for a world not listed.
  region: 'default',
  regions: {},
  // worlds maps a flying-squid world to the rtp world whose chunks it
  // reports changed (POST /v1/worlds/{world}/changes); a world not listed
  // reports nothing.
  worlds: {},
  // cooldownMs is the time between two successful /rtp of a player.
  cooldownMs: 30000,
  // permission: "all" lets every player use /rtp, "op" only operators;
  // regionPermission is the same for /rtp <region> (choosing a region).
  permission: 'all',
  regionPermission: 'op',
  // placeNewPlayers sends a player who joins for the first time to a
  // place of the login sink of their world's region.
  placeNewPlayers: false,
  // waitMs is how long rtp may wait for a place (the request's waitMs);
  // timeoutMs bounds every call beyond that.
  waitMs: 2000,
  timeoutMs: 3000,
  // retries and backoffMs: calls that may be repeated (join, quit,
  // complete, cancel, changes) are retried that many times, the wait
  // doubling from backoffMs.
  retries: 4,
  backoffMs: 200,
  // landTimeoutMs is how long a teleported player has to stand on the
  // ground at the place before the teleport is cancelled.
  landTimeoutMs: 10000,
  // batchMs is how often changed chunks are sent.
  batchMs: 100,
  // partySize bounds a party (/party invite): the rtp region's group
  // size (sinks.group.max_size). inviteMs is how long an invitation
  // stays open.
  partySize: 8,
  inviteMs: 60000,
  // Messages the player reads.
  messages: {
    unavailable: 'Random teleport is unavailable right now; try again in a moment.',
    noPlace: 'No safe place is ready yet; try again in a moment.',
    cooldown: 'You can teleport again in {seconds} s.',
    busy: 'Your teleport is already on its way.',
    denied: 'You may not use this command.',
    unknownRegion: 'There is no region {region}.',
    failed: 'The teleport failed; try again in a moment.',
    done: 'Teleported to {x}, {y}, {z}.',
    partyDone: 'Your party landed around {x}, {z}.',
    partyNone: 'You are in no party: /party invite <player> makes one.',
    partyBusy: '{player} is already on the way somewhere.',
    partyTooLarge: 'Your party is too large to teleport together.',
    partyUsage: 'Usage: /party invite <player> | accept | leave | list',
    partyInvited: 'You invited {player}.',
    partyInvite: '{player} invites you to their party: /party accept',
    partyJoined: 'You joined the party of {player}.',
    partyMemberJoined: '{player} joined your party.',
    partyLeft: 'You left the party.',
    partyMemberLeft: '{player} left the party.',
    partyList: 'Party: {members}',
    partyNoInvite: 'You have no open invitation.',
    partyNotLeader: 'Only {player}, who leads your party, can invite.',
    partyTaken: '{player} is in a party already.',
    partyFull: 'Your party is full ({max} players).',
    partyOffline: 'There is no player {player} online.',
    partySelf: 'You cannot invite yourself.'
  }
})

function fromEnv (env) {
  const out = {}
  if (env.RTP_URL) out.url = env.RTP_URL
  if (env.RTP_TOKEN) out.token = env.RTP_TOKEN
  if (env.RTP_TOKEN_FILE) out.tokenFile = env.RTP_TOKEN_FILE
  if (env.RTP_REGION) out.region = env.RTP_REGION
  if (env.RTP_PERMISSION) out.permission = env.RTP_PERMISSION
  if (env.RTP_COOLDOWN_MS) out.cooldownMs = Number(env.RTP_COOLDOWN_MS)
  if (env.RTP_WORLD) out.worlds = { overworld: env.RTP_WORLD }
  return out
}

// load returns the configuration, checked; it throws an Error naming the
// first bad value.
function load (settings = {}, env = process.env) {
  let file = {}
  const path = settings.configFile || env.RTP_CONFIG
  if (path) file = JSON.parse(fs.readFileSync(path, 'utf8'))
  const cfg = { ...defaults, ...settings, ...file, ...fromEnv(env) }
  cfg.messages = { ...defaults.messages, ...(settings.messages || {}), ...(file.messages || {}) }
  delete cfg.configFile
  if (cfg.tokenFile) cfg.token = fs.readFileSync(cfg.tokenFile, 'utf8').trim()
  let u
  try { u = new URL(cfg.url) } catch { throw new Error(`rtp: url ${JSON.stringify(cfg.url)} is not a URL`) }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`rtp: url ${cfg.url}: want http or https`)
  cfg.url = cfg.url.replace(/\/+$/, '')
  for (const k of ['cooldownMs', 'waitMs', 'timeoutMs', 'retries', 'backoffMs', 'landTimeoutMs', 'batchMs', 'inviteMs']) {
    if (!Number.isFinite(cfg[k]) || cfg[k] < 0) throw new Error(`rtp: ${k} ${JSON.stringify(cfg[k])}: want a number >= 0`)
  }
  if (!Number.isInteger(cfg.partySize) || cfg.partySize < 1 || cfg.partySize > 64) {
    throw new Error(`rtp: partySize ${JSON.stringify(cfg.partySize)}: want an integer from 1 to 64`)
  }
  for (const k of ['permission', 'regionPermission']) {
    if (cfg[k] !== 'all' && cfg[k] !== 'op') throw new Error(`rtp: ${k} ${JSON.stringify(cfg[k])}: want "all" or "op"`)
  }
  return cfg
}

module.exports = { load, defaults }
