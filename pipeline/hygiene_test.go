package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/lease/token"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/verify"
	"github.com/rtpengine/rtp/world"
)

// chance is a deterministic, goroutine-safe source of failures: the n-th
// call fails when a hash of (seed, n) falls in 1/every.
type chance struct {
	seed uint64
	n    atomic.Uint64
}

func (c *chance) one(every uint64) bool {
	x := c.seed ^ c.n.Add(1)*0x9e3779b97f4a7c15
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 29
	return x%every == 0
}

// TestReservationHygieneRandom runs random sequences of fills, takes,
// drains, clears, lease and bucket operations, clock jumps, reloads and
// concurrent bursts, with failing and panicking transitions, checking after
// every settled step that the rows equal the pipeline's inventory (but for
// the locations whose row a network lease took: see checkRowsLeased), and
// at the end that every reservation opened was closed exactly once.
func TestReservationHygieneRandom(t *testing.T) {
	steps := 300
	if testing.Short() {
		steps = 100
	}
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runHygiene(t, seed, steps) })
	}
}

func runHygiene(t *testing.T, seed uint64, steps int) {
	fail := &chance{seed: seed}
	reg := verify.New(verify.Options{})
	if err := reg.Register("claims", func(verify.Location) bool {
		if fail.one(40) {
			panic("claims plugin panicked")
		}
		return !fail.one(8)
	}); err != nil {
		t.Fatal(err)
	}
	screen := summaryScreen(mixed)
	e := newEnv(t, envConfig{terrain: mixed, opts: func(o *Options) {
		o.Screen = func(ctx context.Context, c geom.Chunk) (Screened, error) {
			switch {
			case fail.one(15):
				return Screened{}, errInjected
			case fail.one(25):
				panic("screen panicked")
			}
			return screen(ctx, c)
		}
		o.Check = func(res *world.Reservation, b geom.Block) (int, memory.Cause, bool) {
			y, c, ok := fakeCheck(res, b)
			if fail.one(30) {
				panic("check panicked")
			}
			return y, c, ok
		}
		o.Verifiers = reg
		o.General.Capacity = 6
		o.ColdCapacity, o.BacklogCapacity = 48, 16
		o.Login = LoginConfig{Enabled: true, PlayerCap: 5}
		o.Network = NetworkConfig{Enabled: true, Capacity: 3, LeaseTTL: 20 * time.Second}
		o.Personal = PersonalConfig{Enabled: true}
		o.MinResidence = 10 * time.Second
		o.DemandHorizon = 10 * time.Second
	}})
	e.rsv.hook = func(geom.Chunk) error {
		switch {
		case fail.one(20):
			return fmt.Errorf("slow disk: %w", context.DeadlineExceeded)
		case fail.one(40):
			return errInjected
		}
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	ctx := context.Background()
	var held []*Hot
	var tokens []token.Token
	leased := map[Location]bool{} // every location a grant took the row of
	settled := true
	hold := func(h *Hot, ok bool) {
		if ok {
			held = append(held, h)
		}
	}
	for step := range steps {
		p := e.p
		switch op := rng.IntN(100); {
		case op < 30:
			e.cycle()
			settled = true
		case op < 38:
			if err := p.Pulse(ctx); err != nil {
				t.Fatal(err)
			}
			settled = false
		case op < 48:
			if rng.IntN(2) == 0 {
				hold(p.General().Take())
			} else {
				hold(p.Login().Take())
			}
		case op < 53:
			for len(held) > 0 && rng.IntN(2) == 0 {
				i := rng.IntN(len(held))
				held[i].Close()
				held = append(held[:i], held[i+1:]...)
			}
		case op < 58:
			if rng.IntN(2) == 0 {
				p.Login().OnJoin()
			} else {
				p.Login().OnQuit()
			}
		case op < 63:
			tok := p.Network().NewToken()
			if loc, err := p.Network().Reserve(tok); err == nil {
				tokens = append(tokens, tok)
				leased[loc] = true
			}
		case op < 66:
			if len(tokens) > 0 {
				if h, err := p.Network().Redeem(tokens[rng.IntN(len(tokens))]); err == nil {
					held = append(held, h)
				}
			}
		case op < 68:
			if len(tokens) > 0 {
				p.Network().Release(tokens[rng.IntN(len(tokens))])
			}
		case op < 73:
			e.now.Advance(time.Duration(1+rng.IntN(30)) * time.Second)
		case op < 78:
			player := fmt.Sprint("p", rng.IntN(4))
			switch rng.IntN(3) {
			case 0:
				if err := p.Personal().Open(player, 1+rng.IntN(2)); err != nil {
					t.Fatal(err)
				}
			case 1:
				hold(p.Personal().Take(player))
			default:
				p.Personal().Close(player)
			}
		case op < 82:
			// A lower cap leaves a surplus for the trims, a higher one
			// starts a login burst.
			p.Login().SetPlayerCap(2 + rng.IntN(6))
		case op < 85:
			if rng.IntN(2) == 0 {
				p.Login().drain()
			} else {
				p.General().drain()
			}
		case op < 87:
			p.Clear()
		case op < 89:
			p.General().SetCapacity(rng.IntN(9))
		case op < 91:
			e.reload()
			tokens = nil
			settled = true
		default:
			// A burst of concurrent takes while a pulse runs.
			var wg sync.WaitGroup
			var mu sync.Mutex
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 3 {
						if h, ok := p.General().Take(); ok {
							mu.Lock()
							held = append(held, h)
							mu.Unlock()
						}
					}
				}()
			}
			if err := p.Pulse(ctx); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			settled = false
		}
		if settled {
			e.checkRowsLeased(fmt.Sprintf("step %d", step), leased)
			e.checkHeld(fmt.Sprintf("step %d", step))
		}
	}
	if err := e.p.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	e.checkRowsLeased("end", leased)
	// Reloads replace the pipeline: count what every one of them did.
	var promotions, screened uint64
	for _, p := range append(e.old, e.p) {
		promotions += p.Stats().Promotions
		screened += p.Stats().Screened
	}
	st := e.p.Stats()
	if promotions == 0 || screened == 0 {
		t.Fatalf("the sequence never promoted anything (%d promotions, %d screened): %+v", promotions, screened, st)
	}
	t.Logf("promotions %d, screened %d, transfers %d, demotions %d, trims %d, rejections %v / %v, reloads %d, opened %d",
		st.Promotions, st.Screened, st.Transfers, st.Demotions, st.Trims, st.ScreenRejections, st.PromotionRejections, len(e.old), e.res.Stats().Opened)
	for _, h := range held {
		h.Close()
	}
	e.shutdown()
}
