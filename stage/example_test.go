package stage_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/rtpengine/rtp/stage"
)

// reservation stands for a reservation on a resident chunk.
type reservation struct{ chunk int }

func (r *reservation) Close() { fmt.Printf("  reservation on chunk %d closed\n", r.chunk) }

// kept is a hot entry: a verified position and the reservation keeping its
// chunk resident.
type kept struct {
	pos int
	res *reservation
}

// A two-stage pipeline: a cold stage of verified positions and a hot stage
// whose entries hold reservations. Promotion and demotion are silent moves;
// the hot stage's OnDispose is the only place a reservation is closed.
func Example_pipeline() {
	quiet := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // deterministic output
			}
			return a
		},
	}))
	cold, _ := stage.NewQueue("cold", 16, stage.Hooks[int]{
		OnAdd:    func(p int) { fmt.Printf("  row +%d\n", p) },
		OnRemove: func(p int) { fmt.Printf("  row -%d\n", p) },
	})
	hot, _ := stage.NewRing("hot", 2, stage.Hooks[kept]{
		OnAdd:     func(e kept) { fmt.Printf("  row +%d\n", e.pos) },
		OnRemove:  func(e kept) { fmt.Printf("  row -%d\n", e.pos) },
		OnDispose: func(e kept) { e.res.Close() },
	})
	promote := stage.Transition[int, kept]{
		Name: "cold->hot",
		Promote: func(_ context.Context, p int) (stage.Outcome[kept], error) {
			switch p {
			case 13:
				return stage.Rejected[kept](stage.ReasonUnsafeBlock, "lava"), nil
			case 666:
				return stage.Outcome[kept]{}, errors.New("region file truncated")
			}
			return stage.Promoted(kept{p, &reservation{chunk: p / 16}}), nil
		},
		Dispose: cold.Dispose,
		Logger:  quiet,
	}

	fmt.Println("ingress:")
	for _, p := range []int{40, 13, 666} {
		cold.Offer(p)
	}
	fmt.Println("promotion:")
	for {
		p, ok := cold.PollSilent()
		if !ok {
			break
		}
		out := promote.Run(context.Background(), p)
		fmt.Printf("  %d: %v\n", p, out)
		switch {
		case out.Promoted:
			hot.OfferSilent(out.Value)
		case out.Reason != stage.ReasonError: // ERROR has disposed p already
			cold.Dispose(p)
		}
	}
	fmt.Println("demotion:")
	e, _ := hot.PollSilent()
	hot.Dispose(e)    // closes the reservation, through OnDispose
	cold.Offer(e.pos) // the bare position goes back to cold
	fmt.Println("shutdown:")
	hot.Close()
	cold.Close()
	// Output:
	// ingress:
	//   row +40
	//   row +13
	//   row +666
	// promotion:
	//   40: promoted
	//   13: rejected UNSAFE_BLOCK: lava
	//   row -13
	// level=WARN msg="stage: transition failed" transition=cold->hot reason=ERROR detail="region file truncated" error="region file truncated"
	//   row -666
	//   666: rejected ERROR: region file truncated
	// demotion:
	//   row -40
	//   reservation on chunk 2 closed
	//   row +40
	// shutdown:
	//   row -40
}

// Per-player buckets: opening is idempotent, closing a key disposes what it
// still holds.
func ExampleKeyed() {
	personal, _ := stage.NewKeyed("personal", func(player string, capacity int) (stage.Stage[kept], error) {
		return stage.NewRing("personal/"+player, capacity, stage.Hooks[kept]{
			OnDispose: func(e kept) { e.res.Close() },
		})
	})
	alice, _ := personal.Open("alice", 2)
	alice.OfferSilent(kept{1, &reservation{chunk: 7}})
	alice.OfferSilent(kept{2, &reservation{chunk: 8}})
	same, _ := personal.Open("alice", 2)
	fmt.Println("same bucket:", same == alice, "holding", same.Len())
	e, _ := personal.Poll("alice")
	fmt.Println("teleport to", e.pos)
	fmt.Println("alice leaves:")
	personal.CloseKey("alice")
	personal.Close()
	// Output:
	// same bucket: true holding 2
	// teleport to 1
	// alice leaves:
	//   reservation on chunk 8 closed
}
