package anvil

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
)

// records is a slog.Handler that keeps what it is given.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *records) Enabled(context.Context, slog.Level) bool { return true }
func (h *records) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *records) WithGroup(string) slog.Handler            { return h }
func (h *records) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r)
	return nil
}

// take returns the records logged since the last take, each as its
// message and attributes.
func (h *records) take() []map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]string
	for _, r := range h.recs {
		m := map[string]string{"msg": r.Message}
		r.Attrs(func(a slog.Attr) bool {
			m[a.Key] = a.Value.String()
			return true
		})
		out = append(out, m)
	}
	h.recs = nil
	return out
}

// damagedSave writes a save folder whose region (0, 0) holds n full
// chunks along z = 0, and returns it, the region file and the chunks.
func damagedSave(t *testing.T, n int) (save, file string, chunks []geom.Chunk) {
	save = t.TempDir()
	writeLevel(t, save, map[string]any{"DataVersion": int32(3955)})
	region := filepath.Join(save, "region")
	if err := os.MkdirAll(region, 0o755); err != nil {
		t.Fatal(err)
	}
	var rcs []regionChunk
	for i := range n {
		pos := geom.Chunk{X: int64(i)}
		chunks = append(chunks, pos)
		rcs = append(rcs, regionChunk{pos: pos, nbt: flatChunk(t, pos, 10+i), scheme: CompressionZlib, stamp: 1})
	}
	return save, writeRegion(t, region, geom.Region{}, rcs), chunks
}

// garble overwrites the zlib header of chunk c's payload in place.
func garble(t *testing.T, file string, c geom.Chunk) {
	t.Helper()
	loc := readHeaderFile(t, file).Locations[Slot(c)]
	putUint32(t, file, int64(loc>>8)*SectorSize+5, 0x01020304)
}

func TestTornRead(t *testing.T) {
	ctx := context.Background()
	t.Run("damaged", func(t *testing.T) {
		save, file, chunks := damagedSave(t, 2)
		garble(t, file, chunks[0])
		w, err := Open(save, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		var pauses []time.Duration
		w.health.pause = func(_ context.Context, d time.Duration) error {
			pauses = append(pauses, d)
			return nil
		}
		_, err = w.Load(ctx, chunks[0])
		var pe *world.PosError
		var ce *ChunkError
		if !errors.Is(err, ErrCorrupt) || !errors.As(err, &pe) || pe.Pos != chunks[0] || !errors.As(err, &ce) {
			t.Fatalf("Load of a garbled chunk = %v, want ErrCorrupt in a PosError and a ChunkError", err)
		}
		if ce.File != "region/r.0.0.mca" || !strings.Contains(err.Error(), "region/r.0.0.mca") || len(err.Error()) > 160 || !strings.HasPrefix(ce.Reason, "zlib: ") {
			t.Errorf("error %q (file %q, reason %q): want short, naming region/r.0.0.mca and the zlib failure", err, ce.File, ce.Reason)
		}
		if len(pauses) != 2 || pauses[0] != 5*time.Millisecond || pauses[1] != 20*time.Millisecond {
			t.Errorf("pauses %v, want [5ms 20ms]", pauses)
		}
		if s := w.Stats(); s.TornRetries != 2 || s.ReadErrors != 1 || s.DamagedChunks != 1 {
			t.Errorf("Stats = %+v, want 2 retries, 1 read error, 1 damaged chunk", s)
		}
		if _, err := w.Load(ctx, chunks[1]); err != nil {
			t.Fatalf("Load of the sound chunk = %v", err)
		}
		if s := w.Stats(); s.TornRetries != 2 || s.ReadErrors != 1 {
			t.Errorf("a sound chunk changed the counters: %+v", s)
		}
	})

	t.Run("truncated", func(t *testing.T) {
		save, file, chunks := damagedSave(t, 2)
		st, _ := os.Stat(file)
		if err := os.Truncate(file, st.Size()-SectorSize+3); err != nil {
			t.Fatal(err)
		}
		w, err := Open(save, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		start := time.Now()
		_, err = w.Load(ctx, chunks[1]) // real pauses
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Load of a cut chunk = %v, want ErrCorrupt", err)
		}
		if d := time.Since(start); d < 25*time.Millisecond {
			t.Errorf("Load gave up after %v, before its pauses of 25ms", d)
		}
		if s := w.Stats(); s.TornRetries != 2 || s.ReadErrors != 1 {
			t.Errorf("Stats = %+v", s)
		}
	})

	t.Run("fixed meanwhile", func(t *testing.T) {
		save, file, chunks := damagedSave(t, 1)
		good, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		garble(t, file, chunks[0])
		w, err := Open(save, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		w.health.pause = func(context.Context, time.Duration) error {
			// The game finishes its write while the reader waits.
			return os.WriteFile(file, good, 0o644)
		}
		ch, err := w.Load(ctx, chunks[0])
		if err != nil || ch.Column(0, 0).Top != 10 {
			t.Fatalf("Load of a chunk fixed before the retry = %v", err)
		}
		if s := w.Stats(); s.TornRetries != 1 || s.ReadErrors != 0 || s.DamagedChunks != 0 {
			t.Errorf("Stats = %+v, want 1 retry and no error", s)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		save, file, chunks := damagedSave(t, 1)
		garble(t, file, chunks[0])
		w, err := Open(save, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		ctx, cancel := context.WithCancel(ctx)
		w.health.pause = func(ctx context.Context, d time.Duration) error {
			cancel()
			return sleepCtx(ctx, time.Hour)
		}
		if _, err := w.Load(ctx, chunks[0]); err != context.Canceled {
			t.Fatalf("Load cancelled during its pause = %v, want context.Canceled", err)
		}
	})
}

// TestDamageWarnings: one warning per damaged chunk until it changes, at
// most warnBurst per window, then a line counting those held back.
func TestDamageWarnings(t *testing.T) {
	const n = warnBurst + 3
	save, file, chunks := damagedSave(t, n)
	for _, c := range chunks {
		garble(t, file, c)
	}
	logs := new(records)
	w, err := Open(save, Options{Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.health.pause = func(context.Context, time.Duration) error { return nil }
	var mu sync.Mutex
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	w.health.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	advance := func(d time.Duration) {
		mu.Lock()
		now = now.Add(d)
		mu.Unlock()
	}
	ctx := context.Background()
	if _, err := w.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	loadAll := func() {
		for range 3 { // the engine asks again and again
			for _, c := range chunks {
				if _, err := w.Load(ctx, c); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Load(%v) = %v, want ErrCorrupt", c, err)
				}
			}
		}
	}
	loadAll()
	recs := logs.take()
	if len(recs) != warnBurst {
		t.Fatalf("%d log lines for %d damaged chunks read 3 times, want %d: %v", len(recs), n, warnBurst, recs)
	}
	for i, r := range recs {
		if r["msg"] != "anvil: damaged chunk" || r["file"] != "region/r.0.0.mca" || r["chunk"] != fmt.Sprintf("%d,0", i) ||
			!strings.HasPrefix(r["reason"], "zlib: ") || len(r["reason"]) > maxReason {
			t.Errorf("warning %d = %v", i, r)
		}
	}
	if s := w.Stats(); s.WarningsSuppressed != 3 || s.DamagedChunks != n || s.ReadErrors != 3*n {
		t.Errorf("Stats = %+v, want 3 suppressed, %d damaged, %d read errors", s, n, 3*n)
	}

	// The window ends; the next Poll says how many were held back.
	advance(warnWindow)
	if c, err := w.Poll(ctx); err != nil || !isEmpty(c) {
		t.Fatalf("Poll = %+v, %v", c, err)
	}
	recs = logs.take()
	if len(recs) != 1 || !strings.Contains(recs[0]["msg"], "suppressed") || recs[0]["suppressed"] != "3" {
		t.Fatalf("after the window: %v, want one line counting 3 suppressed", recs)
	}
	// The held-back chunks are warned about now; the others are not again.
	loadAll()
	recs = logs.take()
	if len(recs) != 3 {
		t.Fatalf("%d warnings in the new window, want the 3 held back: %v", len(recs), recs)
	}
	for i, r := range recs {
		if r["chunk"] != fmt.Sprintf("%d,0", warnBurst+i) {
			t.Errorf("new window warning %d = %v", i, r)
		}
	}

	// A chunk that changes is warned about again if still damaged, and
	// forgotten once it reads fine.
	advance(warnWindow)
	hdr := readHeaderFile(t, file)
	putUint32(t, file, SectorSize+4*int64(Slot(chunks[0])), 2)
	putUint32(t, file, SectorSize+4*int64(Slot(chunks[1])), 2)
	good := flatChunk(t, chunks[1], 50)
	payload := compress(t, CompressionZlib, good)
	loc := hdr.Locations[Slot(chunks[1])]
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if int(loc&0xff)*SectorSize < len(payload)+5 {
		t.Fatalf("rewritten chunk does not fit its sectors")
	}
	body := binary.BigEndian.AppendUint32(nil, uint32(len(payload)+1))
	body = append(append(body, CompressionZlib), payload...)
	if _, err := f.WriteAt(body, int64(loc>>8)*SectorSize); err != nil {
		t.Fatal(err)
	}
	f.Close()
	stamp(t, file, 7)
	c, err := w.Poll(ctx)
	if err != nil || len(c.Chunks) != 2 || c.Chunks[0] != chunks[0] || c.Chunks[1] != chunks[1] {
		t.Fatalf("Poll = %+v, %v; want chunks 0 and 1", c, err)
	}
	loadOne := func(c geom.Chunk) error { _, err := w.Load(ctx, c); return err }
	if err := loadOne(chunks[0]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Load of the changed, still damaged chunk = %v", err)
	}
	if err := loadOne(chunks[1]); err != nil {
		t.Fatalf("Load of the repaired chunk = %v", err)
	}
	recs = logs.take()
	if len(recs) != 1 || recs[0]["chunk"] != "0,0" {
		t.Fatalf("after the change: %v, want one warning about chunk 0,0", recs)
	}
	if s := w.Stats(); s.DamagedChunks != n-1 {
		t.Errorf("DamagedChunks = %d, want %d (the repaired one forgotten)", s.DamagedChunks, n-1)
	}
}

func TestShortReason(t *testing.T) {
	if got := shortReason(corrupt("zlib: bad header %#x %#x", 1, 2)); got != "zlib: bad header 0x1 0x2" {
		t.Errorf("shortReason = %q", got)
	}
	long := corrupt("%s", strings.Repeat("é", 200))
	got := shortReason(long)
	if len(got) > maxReason || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "éé") || !utf8Valid(got) {
		t.Errorf("shortReason of a long error = %q (%d bytes)", got, len(got))
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// TestLoadAllocsDamaged: with a damaged chunk known, loading a sound one
// still costs one allocation.
func TestLoadAllocsDamaged(t *testing.T) {
	if raceBuild {
		t.Skip("under the race detector sync.Pool drops items at random, so allocations are not counted")
	}
	save, file, chunks := damagedSave(t, 2)
	garble(t, file, chunks[0])
	w, err := Open(save, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.health.pause = func(context.Context, time.Duration) error { return nil }
	ctx := context.Background()
	w.Load(ctx, chunks[0])
	if w.Stats().DamagedChunks != 1 {
		t.Fatal("damage not recorded")
	}
	if _, err := w.Load(ctx, chunks[1]); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(50, func() { w.Load(ctx, chunks[1]) }); n > 1 {
		t.Errorf("Load allocates %v times per chunk, want 1", n)
	}
}
