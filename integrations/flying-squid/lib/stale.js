'use strict'

// ignoreStaleMoves makes the server ignore the movements a client sent
// before it saw the teleport to (x, z), as a vanilla server does until
// the client confirms a teleport. flying-squid takes every position a
// client reports: a packet in flight when the plugin moves a player (one
// who just joined is still sending its spawn position) moves the
// server's player back, and a move that far from the last chunk stream
// starts a new one around the old position, which unloads the landing
// chunk from the client: the player hangs in the air with nothing under
// it until that stream ends and the next move brings the chunks back.
//
// It cancels, quietly (no position sent back, no plugin told), every
// move the client reports more than slack blocks from (x, z) across,
// until the client reports a position within slack blocks of it: it has
// taken the teleport, and moves from there on are its own. A teleport
// confirmation does not end it: flying-squid gives every teleport the
// same id, so an older one's confirmation could arrive after this one.
// A teleport elsewhere by the server (an operator's /tp) ends it too. The
// returned function ends it early (the player landed, left, or the
// landing timed out); calling it again does nothing.
function ignoreStaleMoves (player, x, z, slack = 2) {
  let done = false
  const far = (p) => Math.abs(p.x - x) > slack || Math.abs(p.z - z) > slack
  const onMoveCancel = (data, cancel) => {
    if (!data || !data.position) return
    if (data.teleport) {
      // The server moving the player elsewhere (an operator's /tp) ends
      // the hold: what the client reports next is that place.
      if (far(data.position)) end()
      return
    }
    if (far(data.position)) cancel(false, true)
  }
  const onPacket = (p) => {
    if (typeof p.x === 'number' && typeof p.z === 'number' && !far(p)) end()
  }
  const end = () => {
    if (done) return
    done = true
    player.removeListener('move_cancel', onMoveCancel)
    player._client.removeListener('position', onPacket)
    player._client.removeListener('position_look', onPacket)
  }
  // flying-squid's own packet listeners, registered at login, run before
  // these: a client's first position at the target passes the hold (it
  // is not far), then ends it.
  player.on('move_cancel', onMoveCancel)
  player._client.on('position', onPacket)
  player._client.on('position_look', onPacket)
  return end
}

module.exports = { ignoreStaleMoves }
