'use strict'
// Unit tests of the plugin's parts that need no Minecraft server: the
// configuration, the client's errors, retries and timeouts, and the
// batching of changed chunks. Run with `npm test` (node --test).

const test = require('node:test')
const assert = require('node:assert')
const http = require('node:http')
const { once } = require('node:events')
const config = require('../../lib/config')
const { Client } = require('../../lib/client')
const { ChangeReporter } = require('../../lib/changes')

// serve starts an HTTP server answering with handler(req, body); it
// resolves to its base URL and the server.
async function serve (handler) {
  const srv = http.createServer((req, res) => {
    let body = ''
    req.on('data', d => { body += d })
    req.on('end', () => handler(req, body, res))
  })
  srv.listen(0, '127.0.0.1')
  await once(srv, 'listening')
  return { url: `http://127.0.0.1:${srv.address().port}`, srv }
}

// A bound a loaded machine's local server answers within; the tests of
// timeouts set their own.
const base = { token: '', timeoutMs: 10000, retries: 3, backoffMs: 5, waitMs: 100 }

test('config: defaults, settings, environment, and bad values', () => {
  const c = config.load({ region: 'r', cooldownMs: 5 }, { RTP_URL: 'http://h:1/', RTP_COOLDOWN_MS: '7' })
  assert.strictEqual(c.url, 'http://h:1')
  assert.strictEqual(c.region, 'r')
  assert.strictEqual(c.cooldownMs, 7)
  assert.strictEqual(c.messages.noPlace, config.defaults.messages.noPlace)
  assert.throws(() => config.load({ url: 'ftp://x' }, {}), /want http/)
  assert.throws(() => config.load({ cooldownMs: -1 }, {}), /cooldownMs/)
  assert.throws(() => config.load({ permission: 'admin' }, {}), /permission/)
})

test('client: a teleport sends the token and the headers, and decodes the place', async (t) => {
  let seen
  const { url, srv } = await serve((req, body, res) => {
    seen = { method: req.method, url: req.url, auth: req.headers.authorization, ct: req.headers['content-type'], body: JSON.parse(body) }
    res.writeHead(200, { 'Content-Type': 'application/json' })
    res.end('{"id":5,"x":1,"y":64,"z":-3,"standY":64}')
  })
  t.after(() => srv.close())
  const c = new Client({ ...base, url, token: 'tok' })
  const loc = await c.teleport('my region', 'alice')
  assert.strictEqual(loc.id, 5)
  assert.deepStrictEqual(seen, { method: 'POST', url: '/v1/regions/my%20region/teleports', auth: 'Bearer tok', ct: 'application/json', body: { player: 'alice', waitMs: 100 } })
})

test('client: a group teleport sends the players in order and decodes their places', async (t) => {
  let seen
  const { url, srv } = await serve((req, body, res) => {
    seen = { method: req.method, url: req.url, body: JSON.parse(body) }
    res.writeHead(200, { 'Content-Type': 'application/json' })
    res.end('{"locations":[{"player":"b","id":8,"x":1,"y":64,"z":2,"standY":64},{"player":"a","id":9,"x":2,"y":64,"z":2,"standY":64}]}')
  })
  t.after(() => srv.close())
  const c = new Client({ ...base, url })
  const g = await c.groupTeleport('r', ['b', 'a'])
  assert.deepStrictEqual(g.locations.map(l => [l.player, l.id]), [['b', 8], ['a', 9]])
  assert.deepStrictEqual(seen, { method: 'POST', url: '/v1/regions/r/group-teleports', body: { players: ['b', 'a'], waitMs: 100 } })
})

test('config: party size', () => {
  assert.strictEqual(config.load({}, {}).partySize, 8)
  assert.throws(() => config.load({ partySize: 0 }, {}), /partySize/)
  assert.throws(() => config.load({ partySize: 2.5 }, {}), /partySize/)
})

test('client: error kinds', async (t) => {
  let status = 503
  let code = 'no-location'
  const { url, srv } = await serve((req, body, res) => {
    res.writeHead(status, { 'Content-Type': 'application/json', 'Retry-After': '1' })
    res.end(JSON.stringify({ error: { code, message: 'm' } }))
  })
  t.after(() => srv.close())
  const c = new Client({ ...base, url })
  await assert.rejects(c.teleport('r', 'p'), { kind: 'no-location', status: 503 })
  status = 404
  code = 'unknown-region'
  await assert.rejects(c.teleport('r', 'p'), { kind: 'rejected', code: 'unknown-region' })
  status = 500
  code = 'internal'
  await assert.rejects(c.teleport('r', 'p'), { kind: 'unavailable' })
})

test('client: nothing listening and a server that never answers are "unavailable"', async (t) => {
  const { url, srv } = await serve(() => {}) // never answers
  t.after(() => { srv.closeAllConnections(); srv.close() })
  const slow = new Client({ ...base, url, timeoutMs: 50, waitMs: 0 })
  const start = Date.now()
  await assert.rejects(slow.teleport('r', 'p'), { kind: 'unavailable', message: /no answer in 50 ms/ })
  assert.ok(Date.now() - start < 2000)
  const closed = new Client({ ...base, url: 'http://127.0.0.1:1' })
  await assert.rejects(closed.teleport('r', 'p'), { kind: 'unavailable' })
})

test('client: repeatable calls are retried on outages, not on refusals', async (t) => {
  let calls = 0
  let failFor = 2
  const { url, srv } = await serve((req, body, res) => {
    calls++
    if (calls <= failFor) {
      res.writeHead(503, { 'Content-Type': 'application/json' })
      res.end('{"error":{"code":"shutdown","message":"m"}}')
      return
    }
    res.writeHead(req.url.includes('/quit') ? 409 : 204)
    res.end(req.url.includes('/quit') ? '{"error":{"code":"sink-disabled","message":"m"}}' : '')
  })
  t.after(() => srv.close())
  const c = new Client({ ...base, url })
  assert.strictEqual(await c.join('r', 'p'), null)
  assert.strictEqual(calls, 3) // two 503s, then the 204
  calls = 0
  failFor = 0
  await assert.rejects(c.quit('r', 'p'), { code: 'sink-disabled' })
  assert.strictEqual(calls, 1)
  calls = 0
  failFor = 100
  await assert.rejects(c.complete(1), { kind: 'unavailable' })
  assert.strictEqual(calls, 1 + base.retries)
})

test('changes: chunks batched, de-duplicated, and kept while rtp is down', async (t) => {
  const bodies = []
  let down = true
  const { url, srv } = await serve((req, body, res) => {
    if (down) {
      res.writeHead(503)
      res.end()
      return
    }
    bodies.push({ url: req.url, body: JSON.parse(body) })
    res.writeHead(200, { 'Content-Type': 'application/json' })
    res.end('{"chunks":1,"held":1,"forgotten":0,"dropped":0}')
  })
  t.after(() => srv.close())
  const logs = []
  const rep = new ChangeReporter(new Client({ ...base, url, retries: 0 }), 'world', 1e9, m => logs.push(m))
  t.after(() => rep.close())
  rep.add(1, 1)
  rep.add(15.9, 2) // same chunk
  rep.add(-1, 16)
  await rep.flush()
  assert.strictEqual(bodies.length, 0)
  assert.strictEqual(rep.pending.size, 2, 'a failed send keeps its chunks')
  assert.match(logs[0], /failed/)
  down = false
  await rep.flush()
  assert.strictEqual(bodies.length, 1)
  assert.strictEqual(bodies[0].url, '/v1/worlds/world/changes')
  assert.deepStrictEqual(bodies[0].body.chunks.sort(), [[-1, 1], [0, 0]].sort())
  // Back from an outage: the chunks changed since the last save go again.
  assert.strictEqual(rep.pending.size, 2)
  await rep.flush()
  assert.strictEqual(bodies.length, 2)
  rep.saved()
  await rep.flush() // nothing pending: no call
  assert.strictEqual(bodies.length, 2)
  for (let i = 0; i < 5000; i++) rep.add(i * 16, 0)
  await rep.flush()
  await rep.flush()
  assert.deepStrictEqual(bodies.slice(2).map(b => b.body.chunks.length), [4096, 904])
})

test('changes: after an outage, every chunk changed since the last save is sent again', async (t) => {
  const bodies = []
  let down = false
  const { url, srv } = await serve((req, body, res) => {
    if (down) {
      res.writeHead(503)
      res.end()
      return
    }
    bodies.push(JSON.parse(body).chunks)
    res.writeHead(200, { 'Content-Type': 'application/json' })
    res.end('{"chunks":1,"held":1,"forgotten":0,"dropped":0}')
  })
  t.after(() => srv.close())
  const rep = new ChangeReporter(new Client({ ...base, url, retries: 0 }), 'world', 1e9, () => {})
  t.after(() => rep.close())
  rep.add(0, 0)
  await rep.flush() // sent: [0, 0]
  rep.saved() // [0, 0] is on disk now
  rep.add(16, 0)
  await rep.flush() // sent: [1, 0]
  down = true
  rep.add(32, 0)
  await rep.flush() // fails: [2, 0] kept
  down = false
  await rep.flush() // [2, 0], then the unsaved ones again
  await rep.flush()
  assert.deepStrictEqual(bodies, [[[0, 0]], [[1, 0]], [[2, 0]], [[1, 0], [2, 0]]])
})

test('sendChunksAround: the landing chunk goes first, even when a stream already counts it', async () => {
  const { sendChunksAround } = require('../../lib/chunks')
  const sent = []
  const written = []
  let streamed = 0
  const column = { fake: 'column' }
  const player = {
    username: 'alex',
    _client: { write: (name, data) => written.push([name, data]) },
    // A stream from the spawn counts the landing chunk as the player's
    // already: the stream started for the teleport sends nothing.
    worldSendRestOfChunks: async () => { streamed++ },
    world: { getColumn: async (x, z) => (x === -4 && z === -5 ? column : null) },
    sendChunk: (x, z, c) => sent.push([x, z, c])
  }
  const serv = { supportFeature: (f) => f === 'updateViewPosition', warn: (m) => assert.fail(m) }
  sendChunksAround(serv, player, -62.5, -71.5)
  await new Promise(resolve => setImmediate(resolve))
  assert.deepStrictEqual(written, [['update_view_position', { chunkX: -4, chunkZ: -5 }]])
  assert.deepStrictEqual(sent, [[-4, -5, column]])
  assert.strictEqual(streamed, 1)
})

test('ignoreStaleMoves: moves from elsewhere are cancelled until the client reports the place', () => {
  const { EventEmitter } = require('node:events')
  const { ignoreStaleMoves } = require('../../lib/stale')
  const player = new EventEmitter()
  player._client = new EventEmitter()
  const move = (x, z, teleport = false) => {
    const calls = []
    player.emit('move_cancel', { position: { x, y: 70, z }, onGround: true, teleport }, (...a) => calls.push(a))
    return calls
  }
  const end = ignoreStaleMoves(player, 1000.5, -2000.5)
  // A packet the client sent from its spawn before it saw the teleport:
  // cancelled quietly (no position sent back, hidden from plugins).
  assert.deepStrictEqual(move(8.5, 8.5), [[false, true]])
  assert.deepStrictEqual(move(1003, -2000.5), [[false, true]], 'beyond the slack across')
  // The server's own teleport, and a move at the place, pass.
  assert.deepStrictEqual(move(1000.5, -2000.5, true), [])
  assert.deepStrictEqual(move(1001, -2001.5), [])
  // A packet from elsewhere does not end the hold; one at the place does.
  player._client.emit('position', { x: 8.5, y: 70, z: 8.5, onGround: true })
  assert.deepStrictEqual(move(8.5, 8.5), [[false, true]])
  player._client.emit('position_look', { x: 1000.5, y: 70, z: -2000.5, onGround: false, yaw: 0, pitch: 0 })
  assert.deepStrictEqual(move(8.5, 8.5), [], 'the client took the teleport: its moves are its own')
  assert.strictEqual(player.listenerCount('move_cancel'), 0)
  assert.strictEqual(player._client.listenerCount('position'), 0)
  assert.strictEqual(player._client.listenerCount('position_look'), 0)
  end() // ending twice does nothing

  // The server moving the player elsewhere ends the hold.
  const end3 = ignoreStaleMoves(player, 0, 0)
  assert.deepStrictEqual(move(1, 1, true), [], 'the teleport to the place')
  assert.deepStrictEqual(move(90, 90), [[false, true]])
  assert.deepStrictEqual(move(500, 500, true), [], 'an operator moves the player')
  assert.deepStrictEqual(move(500, 500), [], 'the client reports where the operator put it')
  assert.strictEqual(player.listenerCount('move_cancel'), 0)
  end3()

  // Ended early (the landing timed out): the listeners go at once.
  const end2 = ignoreStaleMoves(player, 0, 0)
  assert.deepStrictEqual(move(50, 50), [[false, true]])
  end2()
  assert.deepStrictEqual(move(50, 50), [])
  assert.strictEqual(player.listenerCount('move_cancel'), 0)
})
