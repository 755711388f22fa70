package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pipeline"
)

// RecoveryStats tell what a region found of the previous run at start.
//
// The memory file is a snapshot, saved every Options.SaveInterval and at
// shutdown; every rejection and unique-placement mark recorded since, and
// every spot handed out, is journaled in the locations database by its
// writer, in the batch of the location writes around it. At start the
// region loads the snapshot, replays the journal after it and reloads the
// spots, so a killed process loses at most one batch delay of them. The
// locations that were hot when a killed process ended are discarded (they
// may have been handed out), and their spots are marked as handed out.
type RecoveryStats struct {
	// Unclean reports that the previous run did not shut down in order.
	Unclean bool `json:"unclean"`
	// Discarded counts the cached locations dropped at start because they
	// were hot when the previous run was killed: the work an unclean
	// restart throws away. 0 after a clean shutdown.
	Discarded int `json:"discarded"`
	// Replayed counts the journaled rejections replayed into memory;
	// Spots the spots handed out reloaded for unique placement.
	Replayed int `json:"replayed"`
	Spots    int `json:"spots"`
	// LostDatabase, when not empty, warns that the locations database was
	// new or empty at start while files beside it (the region's memory
	// file, the terrain archive) show that this data directory served
	// before: the places handed out earlier, and their unique-placement
	// spots, are forgotten. It names the files.
	LostDatabase string `json:"lostDatabase,omitempty"`
}

// record is the memory table's OnRecord: it journals the rejection.
func (r *Region) record(index int64, cause memory.Cause, source string, at time.Time) {
	if r.journal == nil || cause.Tier() == memory.Transient {
		return
	}
	r.journal.Record(pipeline.Mark{Index: index, Cause: cause, Source: source, At: at})
}

// claimed is the placements' onClaim: it journals the spot.
func (r *Region) claimed(b geom.Block, at time.Time) {
	if r.journal != nil {
		r.journal.Claim(pipeline.Spot{X: b.X, Z: b.Z, At: at})
	}
}

// recoverJournal replays into the region's memory the rejections
// journaled since its file was saved, reloads the spots handed out, and
// marks the spots of the locations discarded after an unclean shutdown.
// It runs before the region does any work.
func (r *Region) recoverJournal(ctx context.Context, p pipeline.Persister) error {
	j, ok := p.(pipeline.Journal)
	if !ok {
		return nil
	}
	marks, err := j.Marks(ctx)
	if err != nil {
		return fmt.Errorf("engine: region %q: %w", r.name, err)
	}
	for _, m := range marks {
		kept, err := r.mem.AddBadAt(m.Index, m.Cause, m.Source, m.At)
		if err != nil {
			// A mark of another shape (the memory file was moved aside).
			continue
		}
		if kept {
			r.recovery.Replayed++
		}
	}
	now := r.e.opts.Clock()
	since := r.markSince(now)
	spots, err := j.Spots(ctx, since)
	if err != nil {
		return fmt.Errorf("engine: region %q: %w", r.name, err)
	}
	for _, s := range spots {
		r.placed.restore(geom.Block{X: s.X, Z: s.Z}, s.At, since)
	}
	r.recovery.Spots = len(spots)
	rec := p.Recovery()
	r.recovery.Unclean = rec.Unclean
	r.recovery.Discarded = len(rec.Discarded)
	r.journal = j
	for _, l := range rec.Discarded {
		// It may have been handed out: mark it as if it had been.
		b := l.Block()
		r.placed.restore(b, now, since)
		r.claimed(b, now)
		r.markArea(b)
	}
	r.mem.Rebuild()
	if rec.Unclean {
		r.log.Warn("engine: the previous run did not shut down cleanly; discarded the cached locations that may have been handed out",
			"discarded", len(rec.Discarded), "replayed", r.recovery.Replayed, "spots", len(spots))
	} else if len(marks) > 0 || len(spots) > 0 {
		r.log.Info("engine: memory journal replayed", "replayed", r.recovery.Replayed, "spots", len(spots))
	}
	return nil
}

// checkLostDatabase warns, at start, when the locations database is new
// or empty while the region's memory file or a terrain archive shows that
// this data directory served before: the database was lost, truncated or
// replaced, and with it every place handed out (unique placement then
// forgets its spots). It is a warning in the log, in the region's
// RecoveryStats and in Engine.Warnings; the region serves all the same.
func (e *Engine) checkLostDatabase(r *Region) {
	fresh := e.db.Fresh()
	if fresh == "" {
		return
	}
	var traces []string
	if r.memExisted {
		traces = append(traces, "the memory file "+r.memPath)
	}
	if e.archives != nil {
		for _, a := range e.archives.Found() {
			traces = append(traces, "the terrain archive "+a)
		}
	}
	if len(traces) == 0 {
		return
	}
	r.recovery.LostDatabase = fmt.Sprintf("the locations database %s was new or empty at start, but %s show that this data directory served before: "+
		"the places handed out earlier and their unique-placement spots are forgotten (restore the database from a backup if it was lost)",
		fresh, strings.Join(traces, " and "))
	r.log.Warn("engine: locations database lost? "+r.recovery.LostDatabase, "region", r.name)
}

// Warnings returns what an operator should know of the engine's state
// that does not stop it serving, one line each, in region order: today,
// the regions whose locations database was found lost at start
// (RecoveryStats.LostDatabase), then what a full disk at start did to the
// terrain archives (read-only, or removed to make room). nil when there is
// nothing to say.
func (e *Engine) Warnings() []string {
	var out []string
	for _, name := range e.names {
		if w := e.regions[name].recovery.LostDatabase; w != "" {
			out = append(out, fmt.Sprintf("region %q: %s", name, w))
		}
	}
	if e.archives != nil {
		out = append(out, e.archives.Warnings()...)
	}
	return out
}

// saveMemory saves the region's memory file, trims the journal of the
// marks it covers and of the spots past the unique-placement window.
func (r *Region) saveMemory() error {
	r.saveMu.Lock()
	defer r.saveMu.Unlock()
	var pos uint64
	if r.journal != nil {
		pos = r.journal.Position()
	}
	if err := r.mem.Save(r.memPath); err != nil {
		return err
	}
	if r.journal != nil {
		r.journal.Trim(pos)
		// Spots older than the unique-placement window place nothing.
		r.journal.TrimSpots(r.markSince(r.e.opts.Clock()))
	}
	return nil
}
