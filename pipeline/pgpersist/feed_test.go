package pgpersist_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rtpengine/rtp/internal/eventually"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/pipeline/persisttest"
	"github.com/rtpengine/rtp/pipeline/pgpersist"
)

// TestFeed: b's cursor, started after a's first marks, reads exactly the
// marks and spots a commits later, never its own, and a notification
// arrives for each of a's commits.
func TestFeed(t *testing.T) {
	schema := newSchema(t)
	a := open(t, schema, "a", pgpersist.Options{})
	b := open(t, schema, "b", pgpersist.Options{})
	ja, jb := region(t, a, "r", "k"), region(t, b, "r", "k")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	notes := make(chan string, 16)
	listening := make(chan bool, 16)
	go b.Listen(ctx, func(r string) { notes <- r }, func(up bool) { listening <- up })
	if up := <-listening; !up {
		t.Fatal("the listener reported a lost connection first")
	}
	now := time.Now()
	ja.Record(pipeline.Mark{Index: 1, Cause: memory.CauseSafety, Source: "a", At: now})
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cur, err := jb.FeedStart(ctx)
	if err != nil {
		t.Fatal(err)
	}
	drain(notes)
	jb.Record(pipeline.Mark{Index: 50, Cause: memory.CauseSafety, Source: "b", At: now})
	jb.Claim(pipeline.Spot{X: 9, Z: 9, At: now})
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	ja.Record(pipeline.Mark{Index: 2, Cause: memory.CauseUniquePlacement, Source: "a", At: now})
	ja.Record(pipeline.Mark{Index: 3, Cause: memory.CauseSafety, Source: "a", At: now})
	ja.Claim(pipeline.Spot{X: 5, Z: 6, At: now})
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-notes:
		if r != "r" {
			t.Fatalf("notification for region %q, want r", r)
		}
		t.Logf("notification %v after a's flush began", time.Since(sent))
	case <-time.After(5 * time.Second):
		t.Fatal("no notification of a's commit")
	}
	marks, spots, err := jb.Feed(ctx, cur)
	if err != nil {
		t.Fatal(err)
	}
	if len(marks) != 2 || marks[0].Index != 2 || marks[1].Index != 3 || marks[0].Cause != memory.CauseUniquePlacement {
		t.Fatalf("Feed marks = %+v, want a's marks 2 and 3 only", marks)
	}
	if len(spots) != 1 || spots[0].X != 5 || spots[0].Z != 6 {
		t.Fatalf("Feed spots = %+v, want a's spot (5, 6) only", spots)
	}
	marks, _, err = jb.Feed(ctx, cur)
	if err != nil || len(marks) != 0 {
		t.Fatalf("second Feed = %+v, %v; want no marks", marks, err)
	}
}

func drain(c chan string) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

// TestHotMarkOwnership: a node cannot mark hot, nor remove, a row another
// node owns or one that is gone; the pipeline drops such entries.
func TestHotMarkOwnership(t *testing.T) {
	schema := newSchema(t)
	fill(t, schema, 4)
	a := open(t, schema, "a", pgpersist.Options{})
	b := open(t, schema, "b", pgpersist.Options{})
	ra, rb := region(t, a, "r", "k"), region(t, b, "r", "k")
	if !ra.StrictHot() {
		t.Fatal("StrictHot() = false for a shared Persister")
	}
	got := claim(t, ra, 2)
	if len(got) != 2 {
		t.Fatalf("a claimed %v, want 2 rows", got)
	}
	mark := func(r *pgpersist.Region, loc pipeline.Location) error {
		done := make(chan error, 1)
		r.MarkHot(loc, true, func(err error) { done <- err })
		return <-done
	}
	if err := mark(rb, got[0]); !errors.Is(err, pipeline.ErrNotOwned) {
		t.Fatalf("b marking a's row hot: %v, want ErrNotOwned", err)
	}
	rb.Remove(got[1])
	if err := b.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := mark(ra, got[1]); err != nil {
		t.Fatalf("a marking its row hot after b's Remove: %v (b must not remove a's row)", err)
	}
	if err := mark(ra, persisttest.Loc(77)); !errors.Is(err, pipeline.ErrNotOwned) {
		t.Fatalf("marking a location without a row: %v, want ErrNotOwned", err)
	}
	if err := mark(ra, got[0]); err != nil {
		t.Fatalf("a marking its own row hot: %v", err)
	}
}

// TestRejoinAfterLostLease: a node whose lease lapsed behind its back
// (its row expired in the database) loses it, refuses hot marks, then
// rejoins as a new run at a later heartbeat and marks unowned rows again;
// rows another node claimed meanwhile stay refused.
func TestRejoinAfterLostLease(t *testing.T) {
	schema := newSchema(t)
	fill(t, schema, 10)
	opts := pgpersist.Options{LeaseTTL: 600 * time.Millisecond, HeartbeatEvery: 100 * time.Millisecond, SweepEvery: time.Hour}
	a := open(t, schema, "a", opts)
	b := open(t, schema, "b", pgpersist.Options{SweepEvery: time.Hour})
	ra, rb := region(t, a, "r", "k"), region(t, b, "r", "k")
	mine := claim(t, ra, 4)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "UPDATE "+pgx.Identifier{schema, "nodes"}.Sanitize()+" SET expires = now() - interval '1 second' WHERE name = 'a'"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	taken := claim(t, rb, 2) // two of a's returned rows, or others
	lost, rejoined := false, false
	eventually.Within(10*time.Second, func() bool {
		if a.Stats().LeaseLost {
			lost = true
		} else if lost {
			rejoined = true
		}
		return rejoined
	})
	if !lost || !rejoined {
		t.Fatalf("lease lost %v, rejoined %v: want both within 10 s", lost, rejoined)
	}
	if a.LeaseUntil().Before(time.Now()) {
		t.Fatalf("after rejoining LeaseUntil() = %v, in the past", a.LeaseUntil())
	}
	if live, err := b.LiveNodes(ctx, "r"); err != nil || !slices.Contains(live, "a") {
		t.Fatalf("LiveNodes(r) after a rejoined = %v, %v; want a listed (it serves r)", live, err)
	}
	byB := map[int64]bool{}
	for _, l := range taken {
		byB[l.Index] = true
	}
	for _, l := range mine {
		done := make(chan error, 1)
		ra.MarkHot(l, true, func(err error) { done <- err })
		err := <-done
		switch {
		case byB[l.Index] && !errors.Is(err, pipeline.ErrNotOwned):
			t.Fatalf("a marked hot row %d that b claimed: %v, want ErrNotOwned", l.Index, err)
		case !byB[l.Index] && err != nil:
			t.Fatalf("a marking its old unowned row %d after rejoining: %v", l.Index, err)
		}
	}
}
