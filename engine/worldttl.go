package engine

import (
	"time"

	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/ttl"
)

// The world's data in memory.
//
// A chunk not generated yet (memory.CauseUngenerated) or damaged on disk
// (memory.CauseUnreadable) stays so until the game writes it. On a
// Minecraft world the watcher sees that write and makes memory forget the
// chunk (see the change watching above), so there memory keeps both as it
// keeps the terrain: until the region file changes (a static run), not
// for a time (watchedTTL). A region laid past what the server generated
// then reads each ungenerated chunk once, instead of drawing and reading
// it again every few minutes, hundreds of times a second at idle. An
// entry causes.ungenerated or causes.unreadable in ttl.yml still sets a
// time. A world without a watcher (an embedder's, or watching off) keeps
// the timed defaults: nobody would say when the chunk appears.
//
// The watcher's baseline is taken at start, so it cannot report what the
// game wrote while the engine was stopped: a region of a watched world
// forgets, as it opens, the ungenerated and unreadable runs its memory
// file brought back (forgetWorldData), and reads those chunks again once.

// watchedTTL is the memory TTL function of a region on a watched
// Minecraft world: e.ttl, except that ungenerated and unreadable are
// permanent (until the watcher reports the chunk changed) unless ttl.yml
// sets them.
func (e *Engine) watchedTTL(c memory.Cause, source string) time.Duration {
	d, rule := e.policy.Load().Resolve(c, source)
	if rule == ttl.RuleDefault && (c == memory.CauseUngenerated || c == memory.CauseUnreadable) {
		return -1
	}
	return d
}

// forgetWorldData makes mem forget its runs of ungenerated and unreadable
// chunks, and returns how many cells it held.
func forgetWorldData(mem *memory.Table) int {
	var drop []int64
	for _, r := range mem.Snapshot().Runs {
		if r.Cause != memory.CauseUngenerated && r.Cause != memory.CauseUnreadable {
			continue
		}
		for i := r.Start; i < r.End(); i++ {
			drop = append(drop, i)
		}
	}
	if len(drop) == 0 {
		return 0
	}
	return mem.Forget(drop...)
}
