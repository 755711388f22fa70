'use strict'
// Batches the chunks whose blocks changed and sends them to rtp
// (POST /v1/worlds/{world}/changes) every batchMs, so that rtp stops
// handing out places there before the server saves the chunks.

const MAX_PER_CALL = 4096 // rtp's bound on one call (engine.MaxChangedChunks)
const MAX_PENDING = 1 << 17 // beyond this, a long outage drops the newest reports

class ChangeReporter {
  // client: a Client; world: the rtp world's name; log(msg): a logger.
  constructor (client, world, batchMs, log) {
    this.client = client
    this.world = world
    this.log = log
    this.pending = new Set()
    // unsaved holds every chunk reported since the world's last save
    // (saved() clears it): rtp keeps its holds in memory, so after an
    // outage (rtp restarted, perhaps) they are all sent again.
    this.unsaved = new Set()
    this.sending = false
    this.failing = false
    this.sent = 0
    this.timer = setInterval(() => { this.flush() }, Math.max(batchMs, 10))
    this.timer.unref?.()
  }

  // add records a changed block at block coordinates x, z.
  add (x, z) {
    if (this.pending.size >= MAX_PENDING) return
    const k = (Math.floor(x) >> 4) + ',' + (Math.floor(z) >> 4)
    this.pending.add(k)
    if (this.unsaved.size < MAX_PENDING) this.unsaved.add(k)
  }

  // saved records that the world was saved: what was reported is on disk.
  saved () { this.unsaved.clear() }

  // flush sends what is pending; a call that fails (after its retries)
  // puts its chunks back for the next flush. One flush runs at a time.
  async flush () {
    if (this.sending || this.pending.size === 0) return
    this.sending = true
    const keys = [...this.pending].slice(0, MAX_PER_CALL)
    for (const k of keys) this.pending.delete(k)
    try {
      await this.client.changes(this.world, keys.map(k => k.split(',').map(Number)))
      this.sent += keys.length
      if (this.failing) {
        this.log(`rtp: reporting changed chunks of ${this.world} works again; sending the ${this.unsaved.size} changed since the last save again`)
        for (const k of this.unsaved) if (this.pending.size < MAX_PENDING) this.pending.add(k)
      }
      this.failing = false
    } catch (err) {
      for (const k of keys) if (this.pending.size < MAX_PENDING) this.pending.add(k)
      if (!this.failing) this.log(`rtp: reporting changed chunks of ${this.world} failed (kept for the next try): ${err.message}`)
      this.failing = true
    } finally {
      this.sending = false
    }
  }

  close () { clearInterval(this.timer) }
}

module.exports = { ChangeReporter, MAX_PER_CALL }
