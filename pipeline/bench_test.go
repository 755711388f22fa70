package pipeline

import (
	"context"
	"testing"

	"github.com/rtpengine/rtp/geom"
)

// BenchmarkHotPoll measures taking a ready location from a hot sink (Take:
// the ring poll, the liveness check, the counters, the persistence
// callback) and, to keep the sink full, giving it back silently.
func BenchmarkHotPoll(b *testing.B) {
	e := newEnv(b, envConfig{})
	defer e.shutdown()
	e.p.opts.Persister = nil // the SQLite variant is in bench_ext_test.go
	g := e.p.General()
	e.fill(20, func() bool { return g.Len() == g.Cap() })
	b.ReportAllocs()
	for b.Loop() {
		h, ok := g.Take()
		if !ok {
			b.Fatal("miss")
		}
		g.ring.OfferSilent(h)
	}
}

// BenchmarkTransfer measures one transfer between two single-target sinks
// (silent poll, residence check, eligibility, silent offer): by provenance
// (rule 1), and by recheck on the resident chunk (rule 2).
func BenchmarkTransfer(b *testing.B) {
	for _, bc := range []struct {
		name    string
		narrows bool
	}{{"provenance", false}, {"recheck", true}} {
		b.Run(bc.name, func(b *testing.B) {
			crit := Criteria{}
			if bc.narrows {
				crit.Contains = func(Location) bool { return true }
			}
			e := newEnv(b, envConfig{opts: func(o *Options) { o.MinResidence = -1 }})
			defer e.shutdown()
			a, d := e.scratchSink("a", 4, crit), e.scratchSink("b", 4, crit)
			defer a.ring.Close() // before shutdown: their entries' reservations close
			defer d.ring.Close()
			for i := range 4 {
				a.deliver(e.hot(geom.Block{X: int64(i) * 16, Z: 3}), e.p.clock())
			}
			now := e.p.clock()
			b.ReportAllocs()
			for b.Loop() {
				if e.p.moveSingles(a, d, 1, now) != 1 {
					b.Fatal("no transfer")
				}
				a, d = d, a
			}
			if st := e.p.Stats(); st.Reservations.Released != 0 {
				b.Fatalf("transfers released %d reservations", st.Reservations.Released)
			}
		})
	}
}

// BenchmarkTakeGroup measures a group request served from a ready
// subspace of 8 places: TakeGroup of 4 (the take, the choice of 4 places
// that fit, the disposal of the other 4, which closes their
// reservations, the counters), then closing the 4 places handed out.
// The subspace each iteration takes is made with the timer stopped.
func BenchmarkTakeGroup(b *testing.B) {
	e := newEnv(b, envConfig{opts: func(o *Options) { o.Group = GroupConfig{Enabled: true} }})
	defer e.shutdown()
	e.p.opts.Persister = nil
	g := e.p.Groups()[0]
	offs := diskOffsets(g.profile.Radius)[:g.profile.Size]
	ctx := context.Background()
	req := GroupRequest{Size: 4}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		s := &Subspace{Places: make([]*Hot, len(offs))}
		for i, o := range offs {
			s.Places[i] = e.hot(geom.Block{X: 8 + int64(o[0]), Z: 8 + int64(o[1])})
		}
		s.Anchor = s.Places[0].Location
		g.deliver(s, e.p.clock())
		b.StartTimer()
		hs, _, err := e.p.TakeGroup(ctx, req)
		if err != nil || len(hs) != 4 {
			b.Fatalf("TakeGroup = %d places, %v", len(hs), err)
		}
		for _, h := range hs {
			h.Close()
		}
	}
}
