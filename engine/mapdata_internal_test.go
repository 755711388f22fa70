package engine

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/rtpengine/rtp/stores/sqlite"
)

// TestMapFeed publishes hand-outs through mapFeed, the hook of the
// hand-out path, and reads them back through the map backend.
func TestMapFeed(t *testing.T) {
	spec := Spec{Stores: sqlite.Stores{}, DataDir: t.TempDir(), Archive: ArchiveSpec{Disabled: true}}
	e, err := New(t.Context(), spec, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	r := e.Region(DefaultRegionName)
	e.mapFeed(r, Location{X: 1, Y: 2, Z: 3, Sink: "general"}) // before any map: dropped
	b := MapBackend(e)
	ch, cancel, err := b.SubscribeDeliveries(DefaultRegionName)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	e.mapFeed(r, Location{X: 4, Y: 65, Z: -6, Sink: "login"})
	ds, err := b.Deliveries(DefaultRegionName)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].X != 4 || ds[0].Z != -6 || ds[0].Sink != "login" || time.Since(ds[0].At) > time.Minute {
		t.Fatalf("deliveries %+v", ds)
	}
	select {
	case d := <-ch:
		if d != ds[0] {
			t.Errorf("streamed %+v, want %+v", d, ds[0])
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery streamed")
	}
	if MapBackend(e).(*mapBackend).feeds[DefaultRegionName] != b.(*mapBackend).feeds[DefaultRegionName] {
		t.Error("a second backend of the engine has other feeds")
	}
}
