package pipeline

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/stage"
	"github.com/rtpengine/rtp/verify"
	"github.com/rtpengine/rtp/world"
)

func TestReasonFor(t *testing.T) {
	for c := range memory.Cause(memory.NumCauses) {
		if r := reasonFor(c); !r.IsRejection() || r == stage.ReasonError {
			t.Errorf("ReasonFor(%v) = %v, want a specific rejection reason", c, r)
		}
	}
	if r := reasonFor(memory.Cause(200)); r != stage.ReasonError {
		t.Errorf("ReasonFor(invalid) = %v, want ERROR", r)
	}
}

func TestScreeningOutcomes(t *testing.T) {
	cases := []struct {
		name      string
		screen    ScreenFunc
		want      stage.Reason
		toCold    bool
		remembers string // memory rejection key, "" for none
		warns     bool
	}{
		{"ok", func(_ context.Context, c geom.Chunk) (Screened, error) {
			return Screened{OK: true, Block: c.Origin(), Y: 70}, nil
		}, stage.ReasonNone, true, "", false},
		{"unsafe", reject(memory.CauseSafety), stage.ReasonUnsafeBlock, false, "safety", false},
		{"biome", reject(memory.CausePrefilterBiome), stage.ReasonBiomeExcluded, false, "prefilterBiome", false},
		{"range", reject(memory.CausePrefilterRange), stage.ReasonOutOfBounds, false, "prefilterRange", false},
		{"ungenerated", reject(memory.CauseUngenerated), stage.ReasonReservationFailed, false, "ungenerated", false},
		{"error", func(context.Context, geom.Chunk) (Screened, error) {
			return Screened{}, errInjected
		}, stage.ReasonError, false, "", true},
		{"panic", func(context.Context, geom.Chunk) (Screened, error) {
			panic("screen exploded")
		}, stage.ReasonError, false, "", true},
		{"outside the chunk", func(_ context.Context, c geom.Chunk) (Screened, error) {
			return Screened{OK: true, Block: geom.Block{X: c.Origin().X + 16, Z: c.Origin().Z}}, nil
		}, stage.ReasonError, false, "", true},
		{"invalid cause", reject(memory.Cause(99)), stage.ReasonError, false, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envConfig{opts: func(o *Options) { o.Screen = tc.screen }})
			defer e.shutdown()
			// No sink is short: a screened place stays in cold.
			e.p.general.quota.Store(0)
			c := Candidate{Index: 7, Chunk: e.shape.Chunk(7)}
			e.p.backlog.Offer(c)
			c, _ = e.p.backlog.PollSilent()
			e.p.runScreening(context.Background(), c)
			if got := e.p.ctr.screenRejects[tc.want].Load(); got != 1 {
				t.Errorf("outcome %v counted %d times, want 1", tc.want, got)
			}
			if got := e.p.cold.Len() == 1; got != tc.toCold {
				t.Errorf("location in cold = %v, want %v", got, tc.toCold)
			}
			if tc.toCold {
				l, _ := e.p.cold.PollSilent()
				if l.Index != 7 || l.World != "overworld" || l.Y != 70 || l.Chunk() != c.Chunk {
					t.Errorf("screened location = %+v", l)
				}
				e.p.cold.OfferSilent(l)
			}
			if tc.remembers != "" && e.mem.Stats().Rejections[tc.remembers] != 1 {
				t.Errorf("memory rejections = %v, want %s once", e.mem.Stats().Rejections, tc.remembers)
			}
			w := e.logs.warnings()
			if warned := len(w) == 1 && strings.Contains(w[0], "transition=screen") && strings.Contains(w[0], "reason=ERROR"); warned != tc.warns {
				t.Errorf("warnings = %q, want a transition warning: %v", w, tc.warns)
			}
			if e.p.backlog.Len() != 0 {
				t.Error("the candidate went back to the backlog")
			}
		})
	}
}

func reject(c memory.Cause) ScreenFunc {
	return func(context.Context, geom.Chunk) (Screened, error) { return Screened{Cause: c, Detail: "test"}, nil }
}

func TestPromotionOutcomes(t *testing.T) {
	type setup struct {
		terrain  terrain
		check    CheckFunc
		verifier func(verify.Location) bool
		reserve  func(geom.Chunk) error
		source   func(geom.Chunk) error
		cancel   bool
	}
	noTop := func(pos geom.Chunk) (world.BlockID, world.BiomeID, int16) { return stone, plains, world.NoTop }
	cases := []struct {
		name      string
		s         setup
		want      stage.Reason
		recycled  bool // the location went back to cold, keeping its row
		remembers string
		warns     bool
		failure   string // the reservation failure kind counted, if any
	}{
		{"promoted", setup{}, stage.ReasonNone, false, "", false, ""},
		{"unsafe", setup{terrain: func(geom.Chunk) (world.BlockID, world.BiomeID, int16) { return lava, plains, 60 }},
			stage.ReasonUnsafeBlock, false, "safety", false, ""},
		{"biome", setup{terrain: func(geom.Chunk) (world.BlockID, world.BiomeID, int16) { return stone, desert, 60 }},
			stage.ReasonBiomeExcluded, false, "biome", false, ""},
		{"vertical", setup{terrain: noTop}, stage.ReasonOutOfBounds, false, "vert", false, ""},
		{"ungenerated", setup{source: func(geom.Chunk) error { return world.ErrUngenerated }},
			stage.ReasonReservationFailed, false, "ungenerated", false, "ungenerated"},
		{"load error", setup{source: func(geom.Chunk) error { return errInjected }},
			stage.ReasonReservationFailed, false, "nullChunk", false, "unreadable"},
		{"reserve timeout", setup{reserve: func(geom.Chunk) error { return fmt.Errorf("slow: %w", context.DeadlineExceeded) }},
			stage.ReasonReservationFailed, true, "timeout", false, "timeout"},
		{"claimed", setup{verifier: func(verify.Location) bool { return false }},
			stage.ReasonClaimProtected, false, "safetyExternal[claims]", false, ""},
		{"verifier panics", setup{verifier: func(verify.Location) bool { panic("claims plugin") }},
			stage.ReasonClaimProtected, true, "timeout[claims]", false, ""},
		{"check panics", setup{check: func(*world.Reservation, geom.Block) (int, memory.Cause, bool) { panic("check exploded") }},
			stage.ReasonError, false, "", true, ""},
		{"check invalid cause", setup{check: func(*world.Reservation, geom.Block) (int, memory.Cause, bool) { return 0, 77, false }},
			stage.ReasonError, false, "", true, ""},
		{"shutting down", setup{cancel: true}, stage.ReasonShuttingDown, true, "", false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var reg *verify.Registry
			if tc.s.verifier != nil {
				reg = verify.New(verify.Options{})
				if err := reg.Register("claims", tc.s.verifier); err != nil {
					t.Fatal(err)
				}
			}
			e := newEnv(t, envConfig{terrain: tc.s.terrain, opts: func(o *Options) {
				o.Verifiers = reg
				if tc.s.check != nil {
					o.Check = tc.s.check
				}
			}})
			e.src.fail = tc.s.source
			e.rsv.hook = tc.s.reserve
			loc := Location{World: "overworld", X: 40, Y: 65, Z: 40, Index: 3}
			e.p.cold.Offer(loc)
			loc, _ = e.p.cold.PollSilent()
			ctx := context.Background()
			if tc.s.cancel {
				e.p.cancel()
				ctx = e.p.base
			}
			h, ok := e.p.promoteOne(ctx, loc, nil)
			if ok != (tc.want == stage.ReasonNone) {
				t.Fatalf("promoteOne ok = %v, want %v", ok, tc.want == stage.ReasonNone)
			}
			if got := e.p.ctr.promotionRejects[tc.want].Load(); got != 1 {
				t.Errorf("outcome %v counted %d times, want 1", tc.want, got)
			}
			if ok {
				if !h.live() || h.Y != 65 || h.Location.Index != 3 {
					t.Errorf("promoted entry %+v, live %v", h.Location, h.live())
				}
				h.Close()
			}
			inCold := e.p.cold.Len() == 1
			if inCold != tc.recycled {
				t.Errorf("recycled into cold = %v, want %v", inCold, tc.recycled)
			}
			rows := e.pers.counts()[loc]
			if want := map[bool]int{true: 1, false: 0}[tc.recycled]; !ok && rows != want {
				t.Errorf("rows of the location = %d, want %d", rows, want)
			}
			if tc.remembers != "" && e.mem.Stats().Rejections[tc.remembers] != 1 {
				t.Errorf("memory rejections = %v, want %s once", e.mem.Stats().Rejections, tc.remembers)
			}
			w := e.logs.warnings()
			if warned := len(w) == 1 && strings.Contains(w[0], "transition=promote") && strings.Contains(w[0], "reason=ERROR"); warned != tc.warns {
				t.Errorf("warnings = %q, want a transition warning: %v", w, tc.warns)
			}
			if n := e.rsv.openCount(); n != 0 {
				t.Errorf("%d reservations left open by a rejected promotion", n)
			}
			st := e.p.Stats()
			if tc.failure != "" {
				if st.ReservationFailures[tc.failure] != 1 || len(st.ReservationFailures) != 1 {
					t.Errorf("ReservationFailures = %v, want %s once", st.ReservationFailures, tc.failure)
				}
				if tc.failure == "unreadable" && !strings.Contains(st.LastReservationError, errInjected.Error()) {
					t.Errorf("LastReservationError = %q, want the load error", st.LastReservationError)
				}
			} else if len(st.ReservationFailures) != 0 {
				t.Errorf("ReservationFailures = %v, want none", st.ReservationFailures)
			}
			e.shutdown()
		})
	}
}
