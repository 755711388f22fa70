package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ReasonExhausted: the region has no safe place left (see
// ExhaustionStats) and nothing ready: the teleport fails at once instead
// of waiting. Err says how memory's cells divide among the causes.
const ReasonExhausted = "region-exhausted"

// Exhaustion.
//
// A region is exhausted when its memory holds every index of its universe
// as rejected (memory.Table.Selectable is 0: nothing can be drawn) and its
// pipeline holds nothing (pipeline.Pipeline.Holding is 0: nothing cached,
// screening or being promoted). Memory coverage is the authority, so an
// unlucky streak on a big region never counts: every screened chunk ends
// in memory (static causes for the terrain, ungenerated and unreadable for
// the world's data, dynamic ones for verifiers and placement), and only a
// region whose every chunk was screened, or rejected otherwise, is full.
//
// The region checks after each pulse. A region that holds nothing while
// rejections wait for memory's rebuild has memory rebuilt (at most every
// exhaustRebuild), so that a small region is judged in a pulse or two
// rather than at the memory's periodic rebuild. Entering the state is
// logged once (a warning, with the cells by cause), waiting teleports are
// woken and fail with ReasonExhausted, as new ones do at once; leaving it
// is logged once too. The state ends by itself when memory has places
// again: the world's watcher made memory forget changed chunks, dynamic
// runs expired to probation (on a world nobody watches, ungenerated after
// 10 minutes and unreadable after an hour by default; see worldttl.go), or
// a scan reset.

// exhaustRebuild is the shortest time between two memory rebuilds asked
// for by the exhaustion check.
const exhaustRebuild = 250 * time.Millisecond

// ExhaustionStats describe whether a region is exhausted.
type ExhaustionStats struct {
	// Exhausted reports whether the region has no safe place left.
	Exhausted bool `json:"exhausted"`
	// Since is when it became exhausted (zero when it is not).
	Since time.Time `json:"since,omitzero"`
	// ByCause is memory's rejected cells by cause when the region became
	// exhausted (nil when it is not).
	ByCause map[string]int64 `json:"byCause,omitempty"`
	// Times counts the times the region became exhausted since start.
	Times uint64 `json:"times"`
}

// exhaustion is a region's exhaustion state. The flag is read without a
// lock by every teleport that would wait; the rest is guarded by mu.
type exhaustion struct {
	flag atomic.Bool

	mu          sync.Mutex // protects the following fields
	since       time.Time
	byCause     map[string]int64
	times       uint64
	lastRebuild time.Time
}

// checkExhausted updates the region's exhaustion state (see the notes
// above). It runs on the pulse goroutine, after a pulse.
func (r *Region) checkExhausted(now time.Time) {
	x := &r.exhaust
	holding := r.pipe.Holding()
	selectable := r.mem.Selectable()
	if holding == 0 && selectable > 0 && r.mem.Pending() > 0 {
		x.mu.Lock()
		due := now.Sub(x.lastRebuild) >= exhaustRebuild || now.Before(x.lastRebuild)
		if due {
			x.lastRebuild = now
		}
		x.mu.Unlock()
		if due {
			r.mem.Rebuild()
			selectable = r.mem.Selectable()
			holding = r.pipe.Holding()
		}
	}
	exhausted := selectable == 0 && holding == 0
	if exhausted == x.flag.Load() {
		return
	}
	if !exhausted {
		x.mu.Lock()
		since := x.since
		x.since, x.byCause = time.Time{}, nil
		x.flag.Store(false)
		x.mu.Unlock()
		r.log.Info("engine: region has places again", "exhausted", now.Sub(since).Round(time.Millisecond), "selectable", selectable)
		return
	}
	byCause := r.mem.Stats().ByCause
	x.mu.Lock()
	x.since, x.byCause = now, byCause
	x.times++
	x.flag.Store(true)
	x.mu.Unlock()
	r.log.Warn("engine: region exhausted: no safe place left", "cells", r.mem.Len(), "byCause", causeCounts(byCause))
	r.wakeAll()
}

// exhaustionStats returns the region's exhaustion state.
func (r *Region) exhaustionStats() ExhaustionStats {
	x := &r.exhaust
	x.mu.Lock()
	defer x.mu.Unlock()
	return ExhaustionStats{Exhausted: x.flag.Load(), Since: x.since, ByCause: maps.Clone(x.byCause), Times: x.times}
}

// exhaustedError is the Err of a teleport failed with ReasonExhausted.
func (r *Region) exhaustedError() error {
	st := r.exhaustionStats()
	if !st.Exhausted {
		// It had places again by the time the error was made.
		return fmt.Errorf("no safe place left in %d cells", r.mem.Len())
	}
	return fmt.Errorf("no safe place left in %d cells: %s", r.mem.Len(), causeCounts(st.ByCause))
}

// causeCounts renders cells by cause, most first: "vert 900, ungenerated
// 124".
func causeCounts(m map[string]int64) string {
	names := slices.Collect(maps.Keys(m))
	slices.SortFunc(names, func(a, b string) int {
		if m[a] != m[b] {
			if m[a] > m[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", n, m[n])
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

// Exhausted returns the names of the exhausted regions (see
// ExhaustionStats), in configuration order, each with memory's cells by
// cause: "spawn (vert 900, ungenerated 124)".
func (e *Engine) Exhausted() []string {
	var out []string
	for _, name := range e.names {
		r := e.regions[name]
		if r == nil || !r.exhaust.flag.Load() {
			continue
		}
		out = append(out, fmt.Sprintf("%s (%s)", name, causeCounts(r.exhaustionStats().ByCause)))
	}
	return out
}
