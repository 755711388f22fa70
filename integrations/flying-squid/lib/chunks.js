'use strict'

// sendChunksAround sends a teleported player the chunks around them.
// flying-squid sends chunks when a player moves (the move event comes
// before the position changes, so a teleport sends none) and a client
// with no chunk under it does not move: the plugin sends them itself,
// after moving the client's view centre there (1.14 and later).
//
// The landing chunk goes first, on its own. flying-squid marks a chunk as
// the player's when it queues it, and sends a view's worth a few
// milliseconds apart; a stream that has not reached the landing chunk yet
// (a player teleported just after joining, whose spawn area is still
// coming) makes the stream started here skip it, and the player hangs in
// the air until the first stream gets there, seconds later on a busy
// server. A chunk sent twice only replaces the client's copy.
function sendChunksAround (serv, player, x, z) {
  const chunkX = Math.floor(x / 16)
  const chunkZ = Math.floor(z / 16)
  const failed = (err) => serv.warn?.(`rtp: sending chunks to ${player.username} failed: ${err.message}`)
  if (serv.supportFeature('updateViewPosition')) {
    player._client.write('update_view_position', { chunkX, chunkZ })
  }
  Promise.resolve()
    .then(() => player.world.getColumn(chunkX, chunkZ))
    .then(column => player.sendChunk(chunkX, chunkZ, column))
    .catch(failed)
  player.worldSendRestOfChunks().catch(failed)
}

module.exports = { sendChunksAround }
