package engine_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/sqlitedb"
	"github.com/rtpengine/rtp/memory"
)

// isBad reports whether r's memory holds chunk c as rejected.
func isBad(t *testing.T, r *engine.Region, c geom.Chunk) bool {
	t.Helper()
	i, err := r.Memory().ChunkIndex(c)
	if err != nil {
		t.Fatalf("ChunkIndex(%v): %v", c, err)
	}
	return r.Memory().IsBad(i)
}

// TestUniquePlacement runs two regions: "wide", whose unique-placement
// radius covers its whole shape, so that one delivery marks every chunk
// and the locations already cached are dropped; and "spread", where every
// location lands outside the areas marked around the earlier ones.
func TestUniquePlacement(t *testing.T) {
	clock := new(fakeClock)
	cfg := testConfig(t)
	if err := os.WriteFile(filepath.Join(cfg.DataDir, "ttl.yml"), []byte("causes:\n  uniquePlacement: 1h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wide := smallRegion(128)
	wide.UniquePlacement.Radius = 512
	spread := smallRegion(384)
	spread.UniquePlacement.Radius = 64
	delete(cfg.Regions, region)
	cfg.Regions["wide"], cfg.Regions["spread"] = wide, spread
	e := newEngineOpts(t, cfg, engine.Options{Clock: clock.Now})
	run(t, e)

	t.Run("wide", func(t *testing.T) {
		r := e.Region("wide")
		waitFor(t, "a full general sink", func() bool { return fill(stats(t, e, "wide"), "general") == 4 })
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		loc, err := e.Teleport(ctx, "wide", engine.Request{Player: "p"})
		if err != nil {
			t.Fatal(err)
		}
		independentCheck(t, cfg, loc)
		waitFor(t, "every chunk marked", func() bool { return r.Memory().Selectable() == 0 })
		st := stats(t, e, "wide")
		if st.Unique.Marked != 1 || st.Unique.Chunks != uint64(r.Shape().Len()) {
			t.Errorf("Unique = %+v, want 1 place and all %d chunks marked", st.Unique, r.Shape().Len())
		}
		// Everything cached lies in the marked area: dropped, not served;
		// with every chunk marked and nothing left the region is
		// exhausted, and the teleport says so.
		if loc, err := e.Teleport(ctx, "wide", engine.Request{Player: "q"}); reason(err) != engine.ReasonExhausted {
			t.Fatalf("Teleport in a fully marked region = %+v, %v; want %s", loc, err, engine.ReasonExhausted)
		}
		if st := stats(t, e, "wide"); st.Unique.Dropped < 3 {
			t.Errorf("Unique.Dropped = %d, want the 3 locations left in the sink", st.Unique.Dropped)
		}
		var buf bytes.Buffer
		if err := e.ExportMemory("wide", &buf); err != nil {
			t.Fatal(err)
		}
		var ex memory.Export
		if err := json.Unmarshal(buf.Bytes(), &ex); err != nil {
			t.Fatal(err)
		}
		// Every cell is in an active run: uniquePlacement, or a static
		// cause found before (a static run never merges with a dynamic one).
		var cells, unique int64
		for _, run := range ex.Active {
			cells += run.Len
			if run.Cause != "uniquePlacement" {
				continue
			}
			unique += run.Len
			if run.Tier != "dynamic" || run.Expires-ex.Now < 3590 || run.Expires-ex.Now > 3600 {
				t.Errorf("run %+v (now %d): want dynamic, expiring in 1h (ttl.yml)", run, ex.Now)
			}
		}
		if cells != r.Shape().Len() || unique < cells/2 {
			t.Errorf("export holds %d active cells (%d uniquePlacement), want all %d, mostly uniquePlacement", cells, unique, r.Shape().Len())
		}
	})

	t.Run("spread", func(t *testing.T) {
		r := e.Region("spread")
		const radius = 64
		var prev []engine.Location
		for range 6 {
			loc := teleport2(t, e, "spread", engine.Request{Player: "p"})
			b := geom.Block{X: loc.X, Z: loc.Z}
			for _, p := range prev {
				if dx, dz := b.X-p.X, b.Z-p.Z; dx*dx+dz*dz < radius*radius {
					t.Errorf("location %v lands closer than %d blocks to %v", b, radius, geom.Block{X: p.X, Z: p.Z})
				}
			}
			waitFor(t, "the marks of "+b.String(), func() bool { return isBad(t, r, b.Chunk()) })
			// Every chunk of the shape that lies wholly within the radius
			// is marked: none of its columns may be handed out.
			within := func(x, z int64) bool { dx, dz := x-b.X, z-b.Z; return dx*dx+dz*dz < radius*radius }
			for cz := (b.Z - radius) >> 4; cz <= (b.Z+radius)>>4; cz++ {
				for cx := (b.X - radius) >> 4; cx <= (b.X+radius)>>4; cx++ {
					c := geom.Chunk{X: cx, Z: cz}
					o := c.Origin()
					whole := within(o.X, o.Z) && within(o.X+15, o.Z) && within(o.X, o.Z+15) && within(o.X+15, o.Z+15)
					if r.Shape().Contains(c) && whole && !isBad(t, r, c) {
						t.Errorf("chunk %v wholly within %d blocks of %v is not marked", c, radius, b)
					}
				}
			}
			if err := e.Complete(loc.ID); err != nil {
				t.Error(err)
			}
			prev = append(prev, loc)
		}
	})
}

// teleport2 is teleport for a named region.
func teleport2(t *testing.T, e *engine.Engine, region string, req engine.Request) engine.Location {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	loc, err := e.Teleport(ctx, region, req)
	if err != nil {
		t.Fatalf("Teleport: %v", err)
	}
	return loc
}

// TestSpotsTrimmedAtSave: the spots journaled for unique placement are
// deleted once their window has passed, at the next save of the memory,
// rather than only when the next run loads them: a server that runs for
// weeks keeps a journal the size of its window, not of its history.
func TestSpotsTrimmedAtSave(t *testing.T) {
	for _, tc := range []struct {
		name    string
		advance time.Duration // before the engine closes (and saves)
		want    int
	}{
		{"within the window", 0, 3},
		{"past the window", 2 * time.Hour, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := new(fakeClock)
			cfg := testConfig(t)
			if err := os.WriteFile(filepath.Join(cfg.DataDir, "ttl.yml"), []byte("causes:\n  uniquePlacement: 1h\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r := smallRegion(384)
			r.UniquePlacement.Radius = 16
			cfg.Regions[region] = r
			e := newEngineOpts(t, cfg, engine.Options{Clock: clock.Now})
			stop := run(t, e)
			waitFor(t, "a full general sink", func() bool { return fill(stats(t, e, region), "general") == 4 })
			for i := range 3 {
				teleport2(t, e, region, engine.Request{Player: fmt.Sprintf("p%d", i)})
			}
			waitFor(t, "three places marked", func() bool { return stats(t, e, region).Unique.Marked == 3 })
			clock.Advance(tc.advance)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if err := e.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open(sqlitedb.DriverName, sqlitedb.URI(filepath.Join(cfg.DataDir, engine.DefaultDatabase), true))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var n int
			if err := db.QueryRow(`SELECT count(*) FROM spots`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != tc.want {
				t.Errorf("%d spots journaled after the close, want %d", n, tc.want)
			}
		})
	}
}
