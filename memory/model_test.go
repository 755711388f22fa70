package memory

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// The model is a naive per-cell implementation of the rules documented in
// rebuild.go and table.go. It shares no code with the table: every step of
// a random operation sequence is applied to both, then their observable
// state (IsBad of every cell, Select of every rank, the exported runs with
// their attributes) must agree.

type mcell struct {
	bad      bool
	run      int // run id; cells of one run share it
	cause    Cause
	exp, ttl int64
}

type mmark struct {
	start, end int64
	cause      Cause
	exp, ttl   int64
	seq        int
	probRun    int // for probation inputs: run id, else -1
}

type model struct {
	n          int64
	resolution int64
	ttl        TTLFunc
	now        int64
	active     []mcell
	prob       []mcell
	restore    map[int]int64 // probation run id -> new expiry (its TTL is raised in prob)
	pending    []mmark
	nextRun    int
}

func newModel(n, resolution int64, ttl TTLFunc, now int64) *model {
	return &model{n: n, resolution: resolution, ttl: ttl, now: now,
		active: make([]mcell, n), prob: make([]mcell, n), restore: map[int]int64{}}
}

// runsOf groups consecutive bad cells with one run id.
func runsOf(cells []mcell) []Run {
	var out []Run
	for i := 0; i < len(cells); i++ {
		if !cells[i].bad {
			continue
		}
		j := i
		for j+1 < len(cells) && cells[j+1].bad && cells[j+1].run == cells[i].run {
			j++
		}
		c := cells[i]
		out = append(out, Run{Start: int64(i), Len: int64(j - i + 1), Cause: c.cause, Expires: c.exp, TTL: c.ttl})
		i = j
	}
	return out
}

func (m *model) addBad(i int64, c Cause, source string) {
	d := m.ttl(c, source)
	if c.Tier() == Transient || d == 0 {
		return
	}
	var exp, ttl int64
	if d > 0 {
		ttl = int64((d + time.Second - 1) / time.Second)
		exp = m.now + ttl
	}
	if exp != 0 && m.prob[i].bad {
		// Restore with a refreshed TTL: the larger of the run's and the
		// rejection's becomes the run's TTL and sets its new expiry.
		id := m.prob[i].run
		ttl = max(ttl, m.prob[i].ttl)
		for x := range m.prob {
			if m.prob[x].bad && m.prob[x].run == id {
				m.prob[x].ttl = ttl
			}
		}
		m.restore[id] = max(m.restore[id], m.now+ttl)
		return
	}
	m.pending = append(m.pending, mmark{start: i, end: i + 1, cause: c, exp: exp, ttl: ttl, probRun: -1})
}

func (m *model) rebuild() {
	now := m.now
	var marks, cands []mmark
	seq := 0
	push := func(r Run) {
		mk := mmark{start: r.Start, end: r.End(), cause: r.Cause, exp: r.Expires, ttl: r.TTL, seq: seq}
		seq++
		switch {
		case r.Expires <= 0 || now < r.Expires:
			marks = append(marks, mk)
		case now < r.Expires+r.TTL:
			cands = append(cands, mk)
		}
	}
	for _, r := range runsOf(m.active) {
		push(r)
	}
	for _, r := range runsOf(m.prob) {
		if e, ok := m.restore[m.prob[r.Start].run]; ok {
			r.Expires = e
		}
		push(r)
	}
	for _, p := range m.pending {
		push(Run{Start: p.start, Len: 1, Cause: p.cause, Expires: p.exp, TTL: p.ttl})
	}

	// Rule 2: per-cell tier, cause, expiry.
	type cellMark struct {
		tier     Tier
		has      bool
		cause    Cause
		exp, ttl int64
	}
	cells := make([]cellMark, m.n)
	for _, mk := range marks { // static first pass
		if mk.exp > 0 {
			continue
		}
		for x := mk.start; x < mk.end; x++ {
			if !cells[x].has {
				cells[x] = cellMark{tier: Static, has: true, cause: mk.cause}
			}
		}
	}
	for _, mk := range marks {
		if mk.exp <= 0 {
			continue
		}
		for x := mk.start; x < mk.end; x++ {
			c := &cells[x]
			switch {
			case !c.has:
				*c = cellMark{tier: Dynamic, has: true, cause: mk.cause, exp: mk.exp, ttl: mk.ttl}
			case c.tier == Dynamic:
				c.exp = max(c.exp, mk.exp)
				c.ttl = max(c.ttl, mk.ttl)
			}
		}
	}
	// Rule 3: runs of one tier, absorbing gaps of empty cells.
	active := make([]mcell, m.n)
	for x := int64(0); x < m.n; {
		if !cells[x].has {
			x++
			continue
		}
		tier := cells[x].tier
		end := x + 1
		for {
			for end < m.n && cells[end].has && cells[end].tier == tier && joins(cells[end-1].cause, cells[end].cause, 0, 0) {
				end++
			}
			// Look across a gap of empty cells.
			g := end
			for g < m.n && !cells[g].has {
				g++
			}
			if g < m.n && g > end && g-end <= m.resolution && cells[g].tier == tier && joins(cells[end-1].cause, cells[g].cause, g-end, m.resolution) {
				end = g
				continue
			}
			break
		}
		m.nextRun++
		var exp, ttl int64
		for y := x; y < end; y++ {
			exp = max(exp, cells[y].exp)
			ttl = max(ttl, cells[y].ttl)
		}
		for y := x; y < end; y++ {
			active[y] = mcell{bad: true, run: m.nextRun, cause: cells[x].cause, exp: exp, ttl: ttl}
		}
		x = end
	}
	// Rule 4: probation owners by (start, seq), minus active cells.
	slices.SortStableFunc(cands, func(a, b mmark) int { return int(a.start - b.start) })
	owner := make([]int, m.n)
	for x := range owner {
		owner[x] = -1
	}
	for ci, c := range cands {
		for x := c.start; x < c.end; x++ {
			if owner[x] < 0 {
				owner[x] = ci
			}
		}
	}
	prob := make([]mcell, m.n)
	prevOwner := -1
	for x := int64(0); x < m.n; x++ {
		o := owner[x]
		if o < 0 || active[x].bad {
			prevOwner = -1
			continue
		}
		if o != prevOwner {
			m.nextRun++
		}
		prevOwner = o
		c := cands[o]
		prob[x] = mcell{bad: true, run: m.nextRun, cause: c.cause, exp: c.exp, ttl: c.ttl}
	}
	m.active, m.prob = active, prob
	m.pending = nil
	m.restore = map[int]int64{}
}

// load applies the file semantics: the model's runs with their expiries,
// TTL derived from the cause, partitioned by now.
func (m *model) saveLoad() {
	m.rebuild()
	all := append(runsOf(m.active), runsOf(m.prob)...)
	slices.SortFunc(all, func(a, b Run) int { return int(a.Start - b.Start) })
	m.active, m.prob = make([]mcell, m.n), make([]mcell, m.n)
	for _, r := range all {
		var dst []mcell
		r.TTL = 0
		if d := m.ttl(r.Cause, ""); d > 0 {
			r.TTL = int64((d + time.Second - 1) / time.Second)
		}
		switch {
		case r.Expires <= 0:
			r.TTL = 0
			dst = m.active
		case m.now < r.Expires:
			dst = m.active
		case m.now < r.Expires+r.TTL:
			dst = m.prob
		default:
			continue
		}
		m.nextRun++
		for x := r.Start; x < r.End(); x++ {
			dst[x] = mcell{bad: true, run: m.nextRun, cause: r.Cause, exp: r.Expires, ttl: r.TTL}
		}
	}
}

func (m *model) probRuns() []Run {
	runs := runsOf(m.prob)
	for i, r := range runs {
		if e, ok := m.restore[m.prob[r.Start].run]; ok {
			runs[i].Expires = e
		}
	}
	return runs
}

func modelTTL(c Cause, source string) time.Duration {
	switch c.Tier() {
	case Static:
		return -1
	case Transient:
		return 0
	}
	if c == CauseUniquePlacement {
		return 150 * time.Second
	}
	switch source {
	case "a":
		return 100 * time.Second
	case "b":
		return 300*time.Second - 500*time.Millisecond // rounds up to 300
	case "perm":
		return -1
	case "off":
		return 0
	}
	return 200 * time.Second
}

func runsFromExport(rs []ExportRun) []Run {
	out := make([]Run, len(rs))
	for i, r := range rs {
		c, _ := ParseCause(r.Cause)
		out[i] = Run{Start: r.Start, Len: r.Len, Cause: c, Expires: r.Expires, TTL: r.TTL}
	}
	return out
}

func checkAgainstModel(t *testing.T, step string, tb *Table, m *model) {
	t.Helper()
	ex := tb.Export()
	if got, want := runsFromExport(ex.Active), runsOf(m.active); !slices.Equal(got, want) {
		t.Fatalf("%s: active runs\n got %v\nwant %v", step, got, want)
	}
	if got, want := runsFromExport(ex.Probation), m.probRuns(); !slices.Equal(got, want) {
		t.Fatalf("%s: probation runs\n got %v\nwant %v", step, got, want)
	}
	k := int64(0)
	for i := int64(0); i < m.n; i++ {
		if got := tb.IsBad(i); got != m.active[i].bad {
			t.Fatalf("%s: IsBad(%d) = %v, want %v", step, i, got, m.active[i].bad)
		}
		if m.active[i].bad {
			continue
		}
		if got, ok := tb.Select(k); !ok || got != i {
			t.Fatalf("%s: Select(%d) = %d, %v, want %d", step, k, got, ok, i)
		}
		k++
	}
	if got := tb.Selectable(); got != k {
		t.Fatalf("%s: Selectable() = %d, want %d", step, got, k)
	}
	if _, ok := tb.Select(k); ok {
		t.Fatalf("%s: Select(%d) past the selectable cells succeeded", step, k)
	}
}

func TestModel(t *testing.T) {
	causes := []Cause{CauseBiome, CauseSafety, CauseVert, CauseSafetyExternal, CauseSafetyExternal,
		CauseSafetyExternal, CauseUniquePlacement, CauseTimeout, CauseNullChunk,
		CauseUngenerated, CauseUnreadable, CauseUnreadable}
	sources := []string{"", "a", "b", "perm", "off"}
	seqs, steps := 150, 250
	if testing.Short() {
		seqs = 30
	}
	for s := range seqs {
		rng := rand.New(rand.NewPCG(uint64(s), 99))
		n := int64(20 + rng.IntN(200))
		resolution := int64(rng.IntN(5)) - 1 // -1 disables gap absorption
		now := int64(1_800_000_000)
		opts := Options{Len: n, SpatialResolution: resolution, TTL: modelTTL,
			Clock: func() time.Time { return time.Unix(now, 0) }}
		if resolution == 0 {
			opts.SpatialResolution = -1 // 0 would mean the default
		}
		eff := max(resolution, 0)
		if resolution == 3 {
			opts.SpatialResolution = 0 // the default is 3
		}
		tb, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		m := newModel(n, eff, modelTTL, now)
		path := filepath.Join(t.TempDir(), "m.bin")
		var log []string
		for st := range steps {
			var op string
			switch r := rng.IntN(100); {
			case r < 55:
				// Favour clustered indices so runs touch and merge.
				i := rng.Int64N(n)
				if rng.IntN(3) > 0 && st > 0 {
					i = min(n-1, max(0, (rng.Int64N(n/8+1))*8+rng.Int64N(6)))
				}
				c, src := causes[rng.IntN(len(causes))], sources[rng.IntN(len(sources))]
				op = fmt.Sprintf("AddBad(%d, %v, %q)", i, c, src)
				if err := tb.AddBad(i, c, src); err != nil {
					t.Fatalf("%s: %v", op, err)
				}
				m.addBad(i, c, src)
			case r < 70:
				dt := rng.Int64N(250)
				op = fmt.Sprintf("advance %ds", dt)
				now += dt
				m.now = now
			case r < 92:
				op = "Rebuild"
				tb.Rebuild()
				m.rebuild()
			default:
				op = "Save+Open"
				if err := tb.Save(path); err != nil {
					t.Fatal(err)
				}
				tb, err = Open(path, opts)
				if err != nil {
					t.Fatalf("%s: %v", op, err)
				}
				m.saveLoad()
			}
			log = append(log, op)
			checkAgainstModel(t, fmt.Sprintf("seq %d step %d (%s; history %v)", s, st, op, tail(log, 8)), tb, m)
		}
	}
}

func tail(s []string, n int) []string { return s[max(0, len(s)-n):] }
