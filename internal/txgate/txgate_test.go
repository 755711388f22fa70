package txgate

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rtpengine/rtp/internal/bubble"
)

func TestAdmitBoundsAndTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(1, time.Second)
		txctx, release, err := g.Admit(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// The only slot is taken: a second Admit waits until its ctx ends.
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		if _, _, err := g.Admit(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Admit with no slot = %v, want the caller's deadline", err)
		}
		if TimedOut(txctx) {
			t.Fatal("TimedOut before the transaction time ran out")
		}
		bubble.Advance(time.Second)
		var notAdmitted context.Context // fail paths before Admit pass none
		if !TimedOut(txctx) || TimedOut(notAdmitted) {
			t.Fatal("TimedOut after the transaction time = false")
		}
		release()
		_, release, err = g.Admit(context.Background())
		if err != nil {
			t.Fatalf("Admit after release = %v", err)
		}
		release()
	})
}

func TestCloseWaitsAndRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(2, time.Second)
		if err := g.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		closed := make(chan struct{})
		go func() { g.Close(); close(closed) }()
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("Close returned with a call in flight")
		default:
		}
		if err := g.Enter(context.Background()); !errors.Is(err, ErrClosed) {
			t.Fatalf("Enter while closing = %v, want ErrClosed", err)
		}
		g.Leave()
		<-closed
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := New(1, time.Second).Enter(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Enter with a cancelled ctx = %v", err)
		}
	})
}
