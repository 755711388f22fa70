package pipeline

// CachedLocation is a location waiting in the pipeline and where: a hot
// entry of the named sink, or a cold entry (Hot false, Sink ""). The
// places of one group subspace share a positive Group, numbered in the
// listing (0 for a location of no subspace), and Radius is their
// profile's radius.
type CachedLocation struct {
	Location
	Hot    bool
	Sink   string
	Group  int
	Radius int
}

// Locations lists up to limit locations waiting in the pipeline, hot
// before cold: the unleased single-target sinks in refill priority order
// (login, general), the network pool and the locations leased to network
// tokens, every personal bucket, the places of every group subspace, then
// cold; each stage oldest first. more reports that there
// were other locations past limit (limit <= 0 lists none).
//
// It does not change what the pipeline holds, but stages offer no way to
// read them in place, so each one is swept as DropChanged sweeps (each
// entry taken out silently and put back at once, in order): a Take
// meanwhile may find its sink one entry short, and an entry put back into
// a stage a producer filled meanwhile is disposed, as any OfferSilent
// into a full stage. It serializes with Pulse and costs O(entries); call
// it for inspection, not on a request path. A closed pipeline lists
// nothing.
func (p *Pipeline) Locations(limit int) (out []CachedLocation, more bool) {
	if p.closed.Load() {
		return nil, false
	}
	p.pulseMu.Lock()
	defer p.pulseMu.Unlock()
	add := func(l Location, hot bool, sink string) {
		if len(out) >= limit {
			more = true
			return
		}
		out = append(out, CachedLocation{Location: l, Hot: hot, Sink: sink})
	}
	hot := func(name string) func(*Hot) bool {
		return func(h *Hot) bool {
			if h != nil {
				add(h.Location, true, name)
			}
			return false
		}
	}
	for _, s := range p.singles {
		sweepStage(s.ring, hot(s.name))
	}
	if n := p.network; n != nil {
		sweepStage(n.pool.ring, hot(n.Name()))
		for _, l := range n.leasedLocations() {
			add(l, true, n.Name())
		}
	}
	if ps := p.personal; ps != nil {
		for _, k := range ps.keyed.Keys() {
			if s, ok := ps.keyed.Get(k); ok {
				sweepStage(s, hot(ps.name))
			}
		}
	}
	group := 0
	for _, g := range p.groups {
		sweepStage(g.stage, func(s *Subspace) bool {
			if s == nil {
				return false
			}
			group++
			for _, h := range s.Places {
				if len(out) >= limit {
					more = true
					break
				}
				out = append(out, CachedLocation{Location: h.Location, Hot: true, Sink: g.name, Group: group, Radius: g.profile.Radius})
			}
			return false
		})
	}
	sweepStage(p.cold, func(l Location) bool {
		add(l, false, "")
		return false
	})
	return out, more
}
