'use strict'
// Parties: players who teleport together (/rtp party). A party has a
// leader and members; the leader invites (/party invite <player>), the
// invited player accepts (/party accept), anyone leaves (/party leave;
// leaving the server leaves the party too). Parties live in the plugin's
// memory only: a restart of the server ends them.
//
// Every method returns what happened as a plain result, { ok, why, ... },
// and changes nothing when ok is false: the plugin turns results into
// messages, and the unit tests read them.

class Parties {
  // maxSize bounds a party's members (the rtp region's group size);
  // inviteMs is how long an invitation stays open; now tells the time.
  constructor ({ maxSize = 8, inviteMs = 60000, now = Date.now } = {}) {
    this.maxSize = maxSize
    this.inviteMs = inviteMs
    this.now = now
    this.of = new Map() // player -> party { leader, members: [names] }
    this.invites = new Map() // invited player -> { from, at }
  }

  // members returns the members of player's party, the leader first, or
  // [] when player is in none.
  members (player) {
    const p = this.of.get(player)
    return p ? [...p.members] : []
  }

  // leader returns the leader of player's party, or ''.
  leader (player) {
    const p = this.of.get(player)
    return p ? p.leader : ''
  }

  // invite lets from invite to. from leads the party (one is made for
  // from when they are in none); to must be in no party, and the party
  // must have room.
  invite (from, to) {
    if (from === to) return { ok: false, why: 'self' }
    let p = this.of.get(from)
    if (p && p.leader !== from) return { ok: false, why: 'not-leader', leader: p.leader }
    if (this.of.has(to)) return { ok: false, why: 'taken' }
    if (p && p.members.length >= this.maxSize) return { ok: false, why: 'full', max: this.maxSize }
    if (!p) {
      p = { leader: from, members: [from] }
      this.of.set(from, p)
    }
    this.invites.set(to, { from, at: this.now() })
    return { ok: true }
  }

  // accept lets player join the party that invited them last, if the
  // invitation is still open, its party still led by its sender and not
  // full.
  accept (player) {
    const inv = this.invites.get(player)
    if (!inv || this.now() - inv.at > this.inviteMs) {
      this.invites.delete(player)
      return { ok: false, why: 'no-invite' }
    }
    if (this.of.has(player)) return { ok: false, why: 'taken' }
    const p = this.of.get(inv.from)
    if (!p || p.leader !== inv.from) {
      this.invites.delete(player)
      return { ok: false, why: 'no-invite' }
    }
    if (p.members.length >= this.maxSize) return { ok: false, why: 'full', max: this.maxSize }
    this.invites.delete(player)
    p.members.push(player)
    this.of.set(player, p)
    return { ok: true, leader: p.leader, members: [...p.members] }
  }

  // leave takes player out of their party: the next member leads when
  // the leader leaves, and a party of one is no party. It returns the
  // members left behind.
  leave (player) {
    this.invites.delete(player)
    const p = this.of.get(player)
    if (!p) return { ok: false, why: 'no-party' }
    this.of.delete(player)
    p.members = p.members.filter(m => m !== player)
    if (p.leader === player) p.leader = p.members[0] || ''
    if (p.members.length === 1) {
      this.of.delete(p.members[0])
      p.members = []
    }
    return { ok: true, left: [...p.members], leader: p.leader }
  }
}

module.exports = { Parties }
