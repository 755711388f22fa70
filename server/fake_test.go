package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rtpengine/rtp/api"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/verify/claims"
	"github.com/rtpengine/rtp/verify/claims/sqliteclaims"
)

// fakeEngine is an Engine whose answers the test sets: err, when set, is
// returned by every method that can fail; panicking makes every method
// panic. It serves one region "r" on world "w".
type fakeEngine struct {
	mu sync.Mutex
	// mu protects the following fields.
	err      error
	panicked bool
	last     string // the last method called, with its arguments
	calls    int    // methods called

	claims *claims.Store
	// block, when set, makes Teleport wait for it to close, whatever its
	// context says.
	block chan struct{}
	// stats, when set, is what Stats returns for region "r".
	stats *engine.Stats
}

func newFake(t *testing.T) *fakeEngine {
	t.Helper()
	cs, err := sqliteclaims.Open(t.Context(), filepath.Join(t.TempDir(), "claims.db"), sqliteclaims.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return &fakeEngine{claims: cs}
}

func (f *fakeEngine) set(err error, panicking bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err, f.panicked = err, panicking
}

func (f *fakeEngine) call(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last = name
	f.calls++
	if f.panicked {
		panic("fake engine: " + name)
	}
	return f.err
}

// callCount returns the number of method calls so far.
func (f *fakeEngine) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *fakeEngine) lastCall() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

var fakeLocation = engine.Location{ID: 7, Region: "r", World: "w", X: 1, Y: 64, Z: -3, StandY: 64, Biome: "plains", Sink: "general"}

func (f *fakeEngine) Teleport(ctx context.Context, region string, req engine.Request) (engine.Location, error) {
	if f.block != nil {
		<-f.block
	}
	if err := f.call("Teleport " + region + " " + req.Player + " " + req.Sink + " " + req.Token + " client=" + req.Client); err != nil {
		return engine.Location{}, err
	}
	return fakeLocation, nil
}
func (f *fakeEngine) GroupTeleport(ctx context.Context, region string, req engine.GroupRequest) ([]engine.GroupPlace, error) {
	if err := f.call(fmt.Sprintf("GroupTeleport %s %v client=%s", region, req.Players, req.Client)); err != nil {
		return nil, err
	}
	out := make([]engine.GroupPlace, len(req.Players))
	for i, p := range req.Players {
		l := fakeLocation
		l.ID, l.X, l.Sink = uint64(100+i), int64(i), "group/8@8"
		out[i] = engine.GroupPlace{Player: p, Location: l}
	}
	return out, nil
}
func (f *fakeEngine) ChunksChanged(world string, chunks []geom.Chunk) (engine.ChangeReport, error) {
	if err := f.call(fmt.Sprintf("ChunksChanged %s %v", world, chunks)); err != nil {
		return engine.ChangeReport{}, err
	}
	return engine.ChangeReport{Chunks: len(chunks), Held: len(chunks)}, nil
}
func (f *fakeEngine) Complete(id uint64) error { return f.call("Complete") }
func (f *fakeEngine) Cancel(id uint64) error   { return f.call("Cancel") }
func (f *fakeEngine) Join(region, player string) error {
	return f.call("Join " + region + " " + player)
}
func (f *fakeEngine) Quit(region, player string) error {
	return f.call("Quit " + region + " " + player)
}
func (f *fakeEngine) OpenQueue(region, player string, capacity int) error {
	return f.call("OpenQueue " + region + " " + player)
}
func (f *fakeEngine) CloseQueue(region, player string) error {
	return f.call("CloseQueue " + region + " " + player)
}
func (f *fakeEngine) ReserveWait(_ context.Context, region, token string, _ time.Duration, _ <-chan struct{}) (engine.Reservation, error) {
	if err := f.call("Reserve " + region + " " + token); err != nil {
		return engine.Reservation{}, err
	}
	return engine.Reservation{Token: "tok", Location: fakeLocation}, nil
}
func (f *fakeEngine) Redeem(region, token string) (engine.Location, error) {
	if err := f.call("Redeem " + region + " " + token); err != nil {
		return engine.Location{}, err
	}
	return fakeLocation, nil
}
func (f *fakeEngine) Release(region, token string) error {
	return f.call("Release " + region + " " + token)
}
func (f *fakeEngine) Stats(region string) (engine.Stats, error) {
	if region != "r" {
		return engine.Stats{}, &engine.Error{Region: region, Reason: engine.ReasonUnknownRegion}
	}
	if err := f.call("Stats"); err != nil {
		return engine.Stats{}, err
	}
	if f.stats != nil {
		return *f.stats, nil
	}
	return engine.Stats{Region: "r", World: "w"}, nil
}
func (f *fakeEngine) Regions() []string { return []string{"r"} }
func (f *fakeEngine) Locations() engine.LocationWrites {
	return engine.LocationWrites{Pending: 3, Written: 70, Coalesced: 5, Dropped: 1, Failures: 2, Retries: 4, Failing: true}
}
func (f *fakeEngine) Archives() map[string]archive.Stats {
	return map[string]archive.Stats{"w": {Hits: 11, Generations: 7, Invalid: 1, ReadErrors: 2, WriteErrors: 3, DroppedWrites: 5, PendingWrites: 4, Store: true}}
}
func (f *fakeEngine) Refill() engine.RefillStats {
	return engine.RefillStats{Lanes: 1, Rests: 42, Rested: 6300 * time.Microsecond}
}
func (f *fakeEngine) ScanReset(ctx context.Context, region string) error {
	return f.call("ScanReset " + region)
}
func (f *fakeEngine) ScanPause(region string) error  { return f.call("ScanPause " + region) }
func (f *fakeEngine) ScanResume(region string) error { return f.call("ScanResume " + region) }
func (f *fakeEngine) ExportMemory(region string, w io.Writer) error {
	if err := f.call("ExportMemory " + region); err != nil {
		return err
	}
	_, err := io.WriteString(w, `{"world":"w","len":1,"now":0,"active":[],"probation":[]}`)
	return err
}
func (f *fakeEngine) Ready() error          { return f.call("Ready") }
func (f *fakeEngine) Claims() *claims.Store { return f.claims }

// quietLogger discards the log.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// lockedBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// answer is a decoded HTTP answer.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// errCode returns the error code of the answer's body, or "" if it has
// none.
func (a answer) errCode() string {
	var b api.Error
	if json.Unmarshal(a.body, &b) != nil {
		return ""
	}
	return b.Error.Code
}

func (a answer) errMessage() string {
	var b api.Error
	_ = json.Unmarshal(a.body, &b)
	return b.Error.Message
}

// do sends a request to h (in process) and returns the answer. Like the
// project's client, it sends Content-Type application/json with a body and
// the X-RTP-Request header on every mutating request; header (name, value
// pairs) replaces those. Use doRequest for a request of other headers.
func do(t testing.TB, h http.Handler, method, path, body string, header ...string) answer {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if mutating(method) {
		req.Header.Set(HeaderRequest, "1")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return doRequest(h, req)
}

// doRequest serves req with h (in process) and returns the answer.
func doRequest(h http.Handler, req *http.Request) answer {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return answer{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// checkErrorAnswer checks that a is an error answer of the given status
// and code, with a JSON error body and, for 503, a Retry-After.
func checkErrorAnswer(t testing.TB, what string, a answer, status int, code string) {
	t.Helper()
	if a.status != status || a.errCode() != code {
		t.Errorf("%s = %d %s, want %d %s", what, a.status, a.body, status, code)
		return
	}
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q, want application/json", what, ct)
	}
	if a.errMessage() == "" {
		t.Errorf("%s: empty error message in %s", what, a.body)
	}
	if status == http.StatusServiceUnavailable {
		if ra := a.header.Get("Retry-After"); ra == "" || ra == "0" || strings.ContainsAny(ra, ".-") {
			t.Errorf("%s: Retry-After %q, want whole seconds >= 1", what, ra)
		}
	}
	if status == http.StatusUnauthorized && !strings.HasPrefix(a.header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("%s: WWW-Authenticate %q, want Bearer", what, a.header.Get("WWW-Authenticate"))
	}
}
