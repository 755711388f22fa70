package memory

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"
)

// Stats describes a table at one moment.
type Stats struct {
	World         string  `json:"world"`
	Len           int64   `json:"len"`           // size of the index universe
	BadCount      int64   `json:"badCount"`      // cells in active runs (not selectable)
	BadFraction   float64 `json:"badFraction"`   // BadCount / Len
	Probation     int64   `json:"probation"`     // cells on probation (selectable)
	Coverage      float64 `json:"coverage"`      // (BadCount + Probation) / Len: what memory knows of
	ActiveRuns    int     `json:"activeRuns"`    // active runs
	ProbationRuns int     `json:"probationRuns"` // probation runs
	StaticRuns    int     `json:"staticRuns"`    // active runs of the static tier
	TopCause      string  `json:"topCause"`      // cause with the most active cells ("" when none)
	TopCauseShare float64 `json:"topCauseShare"` // its share of BadCount
	// ByCause is the number of active cells per cause name.
	ByCause map[string]int64 `json:"byCause"`
	// Rejections counts AddBad calls per "cause[source]" (or "cause" when the
	// source is empty) since the table was created or loaded; biome counts
	// survive a save and load.
	Rejections    map[string]int64 `json:"rejections"`
	Pending       int              `json:"pending"`       // rejections waiting for a rebuild
	Restored      int64            `json:"restored"`      // probation runs restored by a repeat rejection
	Ignored       int64            `json:"ignored"`       // transient or zero-TTL rejections
	Rebuilds      int64            `json:"rebuilds"`      // rebuilds since creation
	LastRebuild   time.Time        `json:"lastRebuild"`   // zero before the first
	ResidentBytes int64            `json:"residentBytes"` // memory held by the active and probation runs
}

// Key returns the stats key of a cause and source: "cause[source]", or the
// cause name alone when source is empty.
func Key(c Cause, source string) string {
	if source == "" {
		return c.String()
	}
	return c.String() + "[" + source + "]"
}

// Stats returns the table's statistics.
func (t *Table) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.snap.Load()
	act := s.active
	st := Stats{
		World:         t.opts.World,
		Len:           s.n,
		BadCount:      act.bad(),
		Probation:     t.prob.bad(),
		ActiveRuns:    act.len(),
		ProbationRuns: t.prob.len(),
		ByCause:       make(map[string]int64),
		Rejections:    make(map[string]int64, len(t.rejections)),
		Pending:       len(t.pending) + t.nRestore,
		Restored:      t.stats.restored,
		Ignored:       t.stats.ignored,
		Rebuilds:      t.stats.rebuilds,
		LastRebuild:   t.stats.lastRebuild,
		ResidentBytes: act.bytes() + t.prob.bytes() + int64(cap(t.restore))*8,
	}
	var perCause [NumCauses]int64
	for j := range act.len() {
		perCause[act.cause[j]] += act.length(j)
		if act.expiry[j] == 0 {
			st.StaticRuns++
		}
	}
	top := -1
	for c, n := range perCause {
		if n == 0 {
			continue
		}
		st.ByCause[Cause(c).String()] = n
		if top < 0 || n > perCause[top] {
			top = c
		}
	}
	if top >= 0 {
		st.TopCause = Cause(top).String()
		st.TopCauseShare = float64(perCause[top]) / float64(st.BadCount)
	}
	if s.n > 0 {
		st.BadFraction = float64(st.BadCount) / float64(s.n)
		st.Coverage = float64(st.BadCount+st.Probation) / float64(s.n)
	}
	for cs, n := range t.rejections {
		st.Rejections[Key(cs.cause, cs.source)] += n
	}
	return st
}

// String renders the stats for people, one fact a line.
func (s Stats) String() string {
	var b []byte
	line := func(format string, args ...any) { b = fmt.Appendf(b, format+"\n", args...) }
	line("world:          %q", s.World)
	line("indices:        %d", s.Len)
	line("bad:            %d (%.2f%%) in %d runs (%d static)", s.BadCount, 100*s.BadFraction, s.ActiveRuns, s.StaticRuns)
	line("probation:      %d in %d runs", s.Probation, s.ProbationRuns)
	line("coverage:       %.2f%%", 100*s.Coverage)
	if s.TopCause != "" {
		line("top cause:      %s (%.1f%% of bad)", s.TopCause, 100*s.TopCauseShare)
	}
	for _, k := range sortedKeys(s.ByCause) {
		line("  cells %-22s %d", k+":", s.ByCause[k])
	}
	for _, k := range sortedKeys(s.Rejections) {
		line("  rejections %-17s %d", k+":", s.Rejections[k])
	}
	line("resident bytes: %d", s.ResidentBytes)
	return string(b)
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ExportRun is one run in the debug JSON export.
type ExportRun struct {
	Start   int64  `json:"start"`
	Len     int64  `json:"len"`
	Cause   string `json:"cause"`
	Tier    string `json:"tier"`
	Expires int64  `json:"expires,omitempty"` // Unix seconds; absent for static runs
	TTL     int64  `json:"ttl,omitempty"`     // seconds
}

// Export is the debug JSON view of a table: its active and probation runs.
type Export struct {
	World     string      `json:"world"`
	Len       int64       `json:"len"`
	Now       int64       `json:"now"` // Unix seconds when exported
	Active    []ExportRun `json:"active"`
	Probation []ExportRun `json:"probation"`
}

func exportRuns(s *runSet, restore []int64) []ExportRun {
	out := make([]ExportRun, s.len())
	for j := range out {
		r := s.run(j)
		if restore != nil && restore[j] > 0 {
			r.Expires = restore[j]
		}
		out[j] = ExportRun{Start: r.Start, Len: r.Len, Cause: r.Cause.String(), Tier: r.Tier().String(), Expires: r.Expires, TTL: r.TTL}
	}
	return out
}

// Export returns the debug view of the table's runs.
func (t *Table) Export() Export {
	t.mu.Lock()
	defer t.mu.Unlock()
	return Export{
		World:     t.opts.World,
		Len:       t.opts.Len,
		Now:       t.opts.Clock().Unix(),
		Active:    exportRuns(t.snap.Load().active, nil),
		Probation: exportRuns(t.prob, t.restore),
	}
}

// WriteJSON writes the debug export as indented JSON.
func (t *Table) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(t.Export())
}
