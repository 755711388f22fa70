package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/stores"
)

// Paces of a fleet node's upkeep.
const (
	// feedPoll is how often a region reads the journal feed when no
	// notification woke it: the bound on propagation should the listener
	// be down.
	feedPoll = time.Second
	// poolEvery is how often a region claims rows from the shared pool
	// (rows of nodes that stopped or died) while its cold stage has room.
	poolEvery = 250 * time.Millisecond
	// poolBatch bounds the rows one claim takes.
	poolBatch = 512
	// shareEvery is how often the regions' screening shares follow the
	// fleet's live nodes.
	shareEvery = 2 * time.Second
	// pingEvery is how often a node checks that it reaches the database.
	pingEvery = time.Second
)

// fleet is the engine's part in a fleet; nil when it runs alone.
type fleet struct {
	db   stores.Fleet
	node string
	log  *slog.Logger

	listening atomic.Bool
	// down is set while the database does not answer; downSince is when
	// that began (Unix nanoseconds).
	down      atomic.Bool
	downSince atomic.Int64

	mu sync.Mutex
	// mu protects the following field: a wake channel per region
	// (buffered(1)), filled by the listener.
	wake map[string]chan struct{}
}

// defaultNodeName is the host name, a dash and six random hex digits:
// unique per process, recognisable per machine.
func defaultNodeName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "rtp"
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return host + "-" + hex.EncodeToString(b[:])
}

// joinRegion readies a region for the fleet before it replays the
// journal: its feed cursor starts now, so that what the replay misses the
// feed reads (twice at worst, which is harmless).
func (f *fleet) joinRegion(ctx context.Context, r *Region, p pipeline.Persister) error {
	shared, ok := p.(stores.SharedRegion)
	if !ok {
		return nil
	}
	feed, err := shared.Follow(ctx)
	if err != nil {
		return fmt.Errorf("engine: region %q: %w", r.name, err)
	}
	r.fleet = &regionFleet{shared: shared, feed: feed}
	f.mu.Lock()
	f.wake[r.name] = make(chan struct{}, 1)
	f.mu.Unlock()
	return nil
}

// regionFleet is a region's part in a fleet.
type regionFleet struct {
	shared stores.SharedRegion
	feed   stores.Feed // the feed loop's own

	marks, spots, reads, readErrors atomic.Uint64
	claimErrors                     atomic.Uint64
	rank                            atomic.Int64
	size                            atomic.Int64
}

// run drives the fleet's upkeep until ctx ends: the feed listener, the
// database check, the screening shares, and each region's feed and pool
// loop.
func (f *fleet) run(ctx context.Context, regions []*Region) {
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = f.db.Listen(ctx, f.notify, func(up bool) { f.listening.Store(up) })
	})
	wg.Go(func() { f.pingLoop(ctx) })
	wg.Go(func() { f.shareLoop(ctx, regions) })
	for _, r := range regions {
		if r.fleet != nil {
			wg.Go(func() { f.regionLoop(ctx, r) })
		}
	}
	wg.Wait()
}

// notify wakes the feed loop of a region (the listener's callback).
func (f *fleet) notify(region string) {
	f.mu.Lock()
	c := f.wake[region]
	f.mu.Unlock()
	if c == nil {
		return
	}
	select {
	case c <- struct{}{}:
	default:
	}
}

// regionLoop reads the region's feed when woken or every feedPoll, and
// claims pool rows every poolEvery.
func (f *fleet) regionLoop(ctx context.Context, r *Region) {
	f.mu.Lock()
	wake := f.wake[r.name]
	f.mu.Unlock()
	poll := time.NewTicker(feedPoll)
	defer poll.Stop()
	pool := time.NewTicker(poolEvery)
	defer pool.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
			r.readFeed(ctx)
		case <-poll.C:
			r.readFeed(ctx)
		case <-pool.C:
			r.claimPool(ctx)
		}
	}
}

// readFeed applies to the region the marks and spots other nodes
// committed since the last read: rejections into memory, spots into the
// placements.
func (r *Region) readFeed(ctx context.Context) {
	rf := r.fleet
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for range 100 { // a feed read returns at most its limit; catch up
		marks, spots, more, err := rf.feed.Next(ctx)
		rf.reads.Add(1)
		if err != nil {
			if ctx.Err() == nil {
				rf.readErrors.Add(1)
			}
			return
		}
		kept := 0
		for _, m := range marks {
			if ok, err := r.mem.AddBadAt(m.Index, m.Cause, m.Source, m.At); err == nil && ok {
				kept++
			}
		}
		if kept > 0 {
			r.mem.Rebuild()
		}
		rf.marks.Add(uint64(kept))
		if len(spots) > 0 {
			now := r.e.opts.Clock()
			since := r.markSince(now)
			for _, s := range spots {
				r.placed.restore(geom.Block{X: s.X, Z: s.Z}, s.At, since)
			}
			rf.spots.Add(uint64(len(spots)))
		}
		if !more {
			return
		}
	}
}

// claimPool takes rows returned to the shared pool (by nodes that stopped
// or died) into the region's cold stage, as far as it has room.
func (r *Region) claimPool(ctx context.Context) {
	room := min(r.pipe.ColdRoom(), poolBatch)
	if room <= 0 || r.paused.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	locs, err := r.fleet.shared.ClaimPool(ctx, room)
	if err != nil {
		r.pipe.HoldDraws(false)
		if ctx.Err() == nil && !errors.Is(err, stores.ErrLeaseLost) {
			r.fleet.claimErrors.Add(1)
		}
		return
	}
	// While the pool may hold more, draw nothing new: its rows are
	// screened already.
	r.pipe.HoldDraws(len(locs) == room)
	if len(locs) == 0 {
		return
	}
	n := r.pipe.Adopt(locs)
	r.log.Debug("engine: claimed rows from the fleet's pool", "claimed", len(locs), "adopted", n)
}

// shareLoop gives each region's pipeline its share of the chunks among
// the live nodes serving it, every shareEvery.
func (f *fleet) shareLoop(ctx context.Context, regions []*Region) {
	tick := time.NewTicker(shareEvery)
	defer tick.Stop()
	for {
		f.updateShares(ctx, regions)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (f *fleet) updateShares(ctx context.Context, regions []*Region) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, r := range regions {
		if r.fleet == nil {
			continue
		}
		nodes, err := f.db.LiveNodes(ctx, r.name)
		if err != nil {
			return // kept as they were; the ping loop reports the database
		}
		rank := slices.Index(nodes, f.node)
		if rank < 0 {
			// Not (yet) listed as live: screen everything rather than
			// nothing.
			rank, nodes = 0, nil
		}
		r.pipe.SetShare(rank, len(nodes))
		r.fleet.rank.Store(int64(rank))
		r.fleet.size.Store(int64(max(len(nodes), 1)))
	}
}

// pingLoop checks every pingEvery that the database answers, and logs
// when it stops and starts again: while it is down the node serves the
// hot entries it holds and promotes none (see docs/fleet.md).
func (f *fleet) pingLoop(ctx context.Context) {
	tick := time.NewTicker(pingEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := f.db.Ping(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil && !f.down.Load():
			f.downSince.Store(time.Now().UnixNano())
			f.down.Store(true)
			f.log.Warn("engine: the fleet database does not answer; serving the hot entries held, promoting none until it is back",
				"node", f.node, "error", err)
		case err == nil && f.down.Load():
			down := time.Since(time.Unix(0, f.downSince.Load())).Round(time.Millisecond)
			f.down.Store(false)
			f.log.Info("engine: the fleet database answers again; catching up", "node", f.node, "down", down)
		}
	}
}

// ready reports why the node cannot serve as a fleet member, or nil.
func (f *fleet) ready() error {
	if f.down.Load() {
		return fmt.Errorf("engine: the fleet database has not answered since %s",
			time.Unix(0, f.downSince.Load()).UTC().Format(time.RFC3339))
	}
	return nil
}

// FleetStats describe a region's node in a fleet (Stats.Fleet).
type FleetStats struct {
	Node string `json:"node"`
	// Degraded reports that the database does not answer: the node
	// serves the hot entries it holds and promotes none.
	Degraded bool `json:"degraded"`
	// LeaseLost reports that the node's lease lapsed; it rejoins at its
	// next heartbeat.
	LeaseLost bool `json:"leaseLost"`
	// LeaseUntil is until when the node's claims are surely its own.
	LeaseUntil time.Time `json:"leaseUntil"`
	// Listening reports that feed notifications arrive (otherwise the
	// feed is polled every second).
	Listening bool `json:"listening"`
	// Share and Nodes: this node screens share Share (from 0) of Nodes.
	Share int `json:"share"`
	Nodes int `json:"nodes"`
	// FeedMarks and FeedSpots count the rejections and spots learnt from
	// other nodes; FeedReads and FeedErrors the reads of the feed.
	FeedMarks  uint64 `json:"feedMarks"`
	FeedSpots  uint64 `json:"feedSpots"`
	FeedReads  uint64 `json:"feedReads"`
	FeedErrors uint64 `json:"feedErrors"`
	// Adopted counts rows claimed from the shared pool into cold, and
	// Foreign the entries dropped at promotion because another node owned
	// their row (both pipeline.Stats' own, shown here); ClaimErrors the
	// pool claims that failed.
	Adopted     uint64 `json:"adopted"`
	Foreign     uint64 `json:"foreign"`
	ClaimErrors uint64 `json:"claimErrors"`
	// Pending, Failing and LastError describe the writes to the database
	// (see LocationWrites).
	Pending   int    `json:"pending"`
	Failing   bool   `json:"failing"`
	LastError string `json:"lastError,omitempty"`
}

// fleetStats returns the region's FleetStats, nil when it runs alone;
// pst is the pipeline's snapshot of the same Stats.
func (r *Region) fleetStats(pst pipeline.Stats) *FleetStats {
	f, rf := r.e.fleet, r.fleet
	if f == nil || rf == nil {
		return nil
	}
	st := r.e.db.Writes()
	return &FleetStats{
		Node:        f.node,
		Degraded:    f.down.Load() || st.Failing,
		LeaseLost:   f.db.LeaseLost(),
		LeaseUntil:  f.db.LeaseUntil(),
		Listening:   f.listening.Load(),
		Share:       int(rf.rank.Load()),
		Nodes:       int(max(rf.size.Load(), 1)),
		FeedMarks:   rf.marks.Load(),
		FeedSpots:   rf.spots.Load(),
		FeedReads:   rf.reads.Load(),
		FeedErrors:  rf.readErrors.Load(),
		Adopted:     pst.Adopted,
		Foreign:     pst.Foreign,
		ClaimErrors: rf.claimErrors.Load(),
		Pending:     st.Pending,
		Failing:     st.Failing,
		LastError:   st.LastError,
	}
}
