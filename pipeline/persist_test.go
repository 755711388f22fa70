package pipeline

import (
	"context"
	"testing"
)

func TestNewKey(t *testing.T) {
	a, b, c := NewKey(1, []byte("cfg")), NewKey(2, []byte("cfg")), NewKey(1, []byte("cfg2"))
	if a == b || a == c || a != NewKey(1, []byte("cfg")) || len(a) != 35 {
		t.Fatalf("NewKey: %q %q %q; want distinct per seed and config, stable, 35 characters", a, b, c)
	}
}

// TestRestore: after a shutdown, every location the pipeline held (cold and
// hot) comes back as a cold entry, but for one leased to a network token,
// which the lease holds (it may outlive the process); rows of another key
// do not come back and are deleted; rows that cannot belong to the region
// are deleted.
func TestRestore(t *testing.T) {
	store := &memStore{}
	key := NewKey(7, []byte("config A"))
	e := newEnv(t, envConfig{store: store, key: key, opts: func(o *Options) {
		o.Login = LoginConfig{Enabled: true, PlayerCap: 2}
		o.Network = NetworkConfig{Enabled: true, Capacity: 2}
	}})
	e.fill(30, func() bool { return e.p.General().Len() == 10 && e.p.Network().Len() == 2 })
	tok := e.p.Network().NewToken()
	leased, err := e.p.Network().Reserve(tok)
	if err != nil {
		t.Fatal(err)
	}
	inv := e.p.inventory()
	if inv[leased] != 1 {
		t.Fatalf("the leased %+v is held %d times, want once", leased, inv[leased])
	}
	delete(inv, leased)
	held := 0
	for _, n := range inv {
		held += n
	}
	e.shutdown()
	if rows := e.pers.counts(); len(rows) != len(inv) || rows[leased] != 0 {
		t.Fatalf("after shutdown %d rows, %d of the leased %+v; want the %d other locations held (shutdown is not a removal), the leased one none",
			len(rows), rows[leased], leased, len(inv))
	}

	// A bogus row of this key: another world.
	e.pers.Add(Location{World: "nether", X: 1, Y: 2, Z: 3})
	// A row whose index does not map to its chunk.
	e.pers.Add(Location{World: "overworld", X: 5000, Y: 70, Z: 5000, Index: 0})

	e2 := newEnv(t, envConfig{store: store, key: key, opts: func(o *Options) { o.ColdCapacity = 256 }})
	n, err := e2.p.Restore(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n != held || e2.p.cold.Len() != held {
		t.Fatalf("Restore = %d, cold %d; want the %d entries held at shutdown", n, e2.p.cold.Len(), held)
	}
	e2.checkRows("after restore") // the two bogus rows are gone
	if e2.p.Stats().RowAdds != 0 {
		t.Fatal("Restore re-added rows that exist")
	}
	e2.fill(30, func() bool { return e2.p.General().Len() == 10 })
	e2.shutdown()

	// Another configuration: nothing comes back, and the old rows go.
	e3 := newEnv(t, envConfig{store: store, key: NewKey(7, []byte("config B"))})
	defer e3.shutdown()
	if n, err := e3.p.Restore(context.Background()); err != nil || n != 0 {
		t.Fatalf("Restore under another key = %d, %v; want 0", n, err)
	}
	if got := len(store.region("r", key).counts()); got != 0 {
		t.Fatalf("%d rows of the old key survived a load under the new key", got)
	}
}

// TestRestoreOverflow: rows beyond the cold capacity are disposed and their
// rows deleted, so rows and entries still agree.
func TestRestoreOverflow(t *testing.T) {
	store := &memStore{}
	e := newEnv(t, envConfig{store: store})
	e.fill(30, func() bool { return e.p.General().Len() == 10 })
	e.shutdown()
	e2 := newEnv(t, envConfig{store: store, opts: func(o *Options) { o.ColdCapacity = 3 }})
	defer e2.shutdown()
	if n, err := e2.p.Restore(context.Background()); err != nil || n != 3 {
		t.Fatalf("Restore = %d, %v; want 3 (the cold capacity)", n, err)
	}
	e2.checkRows("after an overflowing restore")
}
