'use strict'
// Unit tests of the parties /rtp party teleports together (lib/party.js).

const test = require('node:test')
const assert = require('node:assert')
const { Parties } = require('../../lib/party')

test('party: invite, accept, list, in the order joined', () => {
  const ps = new Parties({ maxSize: 4 })
  assert.deepStrictEqual(ps.invite('ann', 'bob'), { ok: true })
  assert.deepStrictEqual(ps.members('ann'), ['ann'], 'the leader is in a party from the first invitation')
  assert.deepStrictEqual(ps.members('bob'), [], 'an invitation is not a membership')
  assert.deepStrictEqual(ps.accept('bob'), { ok: true, leader: 'ann', members: ['ann', 'bob'] })
  ps.invite('ann', 'cy')
  ps.accept('cy')
  assert.deepStrictEqual(ps.members('cy'), ['ann', 'bob', 'cy'])
  assert.strictEqual(ps.leader('bob'), 'ann')
})

test('party: refusals change nothing', () => {
  const ps = new Parties({ maxSize: 2 })
  assert.strictEqual(ps.invite('ann', 'ann').why, 'self')
  ps.invite('ann', 'bob')
  ps.accept('bob')
  assert.deepStrictEqual(ps.invite('bob', 'cy'), { ok: false, why: 'not-leader', leader: 'ann' })
  assert.deepStrictEqual(ps.invite('ann', 'cy'), { ok: false, why: 'full', max: 2 })
  assert.strictEqual(ps.invite('dee', 'bob').why, 'taken')
  assert.deepStrictEqual(ps.members('dee'), [], 'a refused invitation makes no party')
  assert.strictEqual(ps.accept('cy').why, 'no-invite')
  assert.deepStrictEqual(ps.members('ann'), ['ann', 'bob'])
})

test('party: an invitation expires, and one from a party since left is void', () => {
  let now = 0
  const ps = new Parties({ inviteMs: 1000, now: () => now })
  ps.invite('ann', 'bob')
  now = 1001
  assert.strictEqual(ps.accept('bob').why, 'no-invite')
  ps.invite('ann', 'cy')
  ps.leave('ann')
  assert.strictEqual(ps.accept('cy').why, 'no-invite')
  assert.deepStrictEqual(ps.members('cy'), [])
})

test('party: leaving passes the lead on, and a party of one is no party', () => {
  const ps = new Parties()
  for (const p of ['bob', 'cy', 'dee']) {
    ps.invite('ann', p)
    ps.accept(p)
  }
  assert.deepStrictEqual(ps.leave('ann'), { ok: true, left: ['bob', 'cy', 'dee'], leader: 'bob' })
  assert.strictEqual(ps.leader('dee'), 'bob')
  assert.deepStrictEqual(ps.invite('bob', 'ann'), { ok: true }, 'the new leader invites')
  ps.leave('cy')
  ps.leave('dee')
  assert.deepStrictEqual(ps.members('bob'), [], 'the last member alone is in no party')
  assert.strictEqual(ps.leave('bob').why, 'no-party')
  assert.strictEqual(ps.accept('ann').why, 'no-invite', 'the party that invited ann is gone')
})
