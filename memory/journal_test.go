package memory

import (
	"testing"
	"time"
)

// TestOnRecordReplay: every rejection AddBad accepts reaches OnRecord
// with its time, and replaying them with AddBadAt into a fresh table
// rebuilds the same memory, original expiries included; replays past
// their TTL are skipped.
func TestOnRecordReplay(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	ttl := func(c Cause, _ string) time.Duration {
		if c == CauseUniquePlacement {
			return time.Hour
		}
		return DefaultTTL(c, "")
	}
	type rec struct {
		i  int64
		c  Cause
		s  string
		at time.Time
	}
	var got []rec
	a, err := New(Options{Len: 1000, TTL: ttl, Clock: clock, SpatialResolution: -1,
		OnRecord: func(i int64, c Cause, s string, at time.Time) { got = append(got, rec{i, c, s, at}) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.AddBad(10, CauseSafety, ""); err != nil {
		t.Fatal(err)
	}
	now = now.Add(30 * time.Minute)
	if err := a.AddBad(500, CauseUniquePlacement, ""); err != nil {
		t.Fatal(err)
	}
	if err := a.AddBad(2000, CauseSafety, ""); err == nil {
		t.Fatal("AddBad out of range succeeded")
	}
	if len(got) != 2 || got[0].i != 10 || got[1].i != 500 || !got[1].at.Equal(now) || got[0].at.Equal(now) {
		t.Fatalf("OnRecord saw %+v, want indices 10 then 500 with their times", got)
	}
	b, err := New(Options{Len: 1000, TTL: ttl, Clock: clock, SpatialResolution: -1,
		OnRecord: func(int64, Cause, string, time.Time) { t.Error("AddBadAt called OnRecord") }})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got {
		if kept, err := b.AddBadAt(r.i, r.c, r.s, r.at); err != nil || !kept {
			t.Fatalf("AddBadAt(%+v) = %v, %v", r, kept, err)
		}
	}
	a.Rebuild()
	b.Rebuild()
	for _, i := range []int64{10, 500} {
		if !b.IsBad(i) || !a.IsBad(i) {
			t.Fatalf("index %d not bad after the replay", i)
		}
	}
	// The mark at 500 expires an hour after it was recorded, not an hour
	// after the replay.
	now = got[1].at.Add(time.Hour + time.Minute)
	b.Rebuild()
	if b.IsBad(500) {
		t.Fatal("a replayed mark outlived its original expiry")
	}
	if kept, _ := b.AddBadAt(500, CauseUniquePlacement, "", got[1].at); kept {
		t.Fatal("AddBadAt kept a mark whose TTL had run out")
	}
	if kept, _ := b.AddBadAt(7, CauseTimeout, "", now); kept {
		t.Fatal("AddBadAt kept a transient rejection")
	}
}
