package cli

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/sqlitestore"
)

type cliParams struct{ Seed int64 }

// smallTile is a valid 2x2 tile for req (border 0).
func smallTile(req terrain.Request) *terrain.Tile {
	t := &terrain.Tile{
		Request:    req,
		Elevations: []float32{1, 2, 3, float32(req.OriginX % 7)},
		Water:      []float32{float32(math.NaN()), 0, float32(math.NaN()), 0},
		Cover:      []terrain.Cover{terrain.CoverPlains, terrain.CoverOcean, terrain.CoverForest, terrain.CoverOcean},
	}
	t.Min, t.Max = t.Elevations[0], t.Elevations[0]
	for _, e := range t.Elevations {
		t.Min, t.Max = min(t.Min, e), max(t.Max, e)
	}
	return t
}

// fillArchive creates an archive database holding valid records and the
// given number of invalid ones, and returns its path.
func fillArchive(t *testing.T, valid, invalid int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rtp-data", "archive.db")
	s, err := sqlitestore.Open(t.Context(), path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := terrain.Producer{Name: "procgen", Version: "1"}
	for i := range valid + invalid {
		req := terrain.Request{OriginX: int64(16 * i), Size: 16, Resolution: 2}
		key, err := archive.EncodeKey(p, cliParams{Seed: 1}, req)
		if err != nil {
			t.Fatal(err)
		}
		r := archive.Record{Digest: archive.DigestOf(key), Key: key, Payload: archive.EncodeTile(smallTile(req))}
		switch {
		case i < valid:
		case i%3 == 0:
			r.Payload[len(r.Payload)/2] ^= 1 // checksum fails
		case i%3 == 1:
			bad := smallTile(req)
			bad.Max = 99 // extrema do not match
			r.Payload = archive.EncodeTile(bad)
		default:
			r.Key = []byte("not a key")
		}
		if err := s.Put(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func runArchive(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = Run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestArchiveStats(t *testing.T) {
	path := fillArchive(t, 3, 0)
	out, _, err := runArchive(t, "archive", "stats", "--db", path)
	if err != nil {
		t.Fatalf("archive stats = %v", err)
	}
	for _, want := range []string{path, "entries   3 of 65536", fmt.Sprintf("of %d (", int64(archive.DefaultMaxBytes)), "4.0 GiB"} {
		if !strings.Contains(out, want) {
			t.Errorf("archive stats output lacks %q:\n%s", want, out)
		}
	}
}

func TestArchiveVerify(t *testing.T) {
	path := fillArchive(t, 4, 3)
	out, _, err := runArchive(t, "archive", "verify", "--db", path)
	if err == nil || ExitCode(err) != 1 {
		t.Fatalf("archive verify with invalid records = %v, want exit 1", err)
	}
	if !strings.Contains(out, "7 records: 4 valid, 3 invalid") || strings.Count("\n"+out, "\ninvalid ") != 3 {
		t.Fatalf("archive verify output:\n%s", out)
	}
	for _, want := range []string{"checksum", "extrema", "not a record key"} {
		if !strings.Contains(out, want) {
			t.Errorf("archive verify output lacks the reason %q:\n%s", want, out)
		}
	}
	out, _, err = runArchive(t, "archive", "verify", "--db", path, "--delete-invalid")
	if err != nil || !strings.Contains(out, "deleted 3 invalid records") {
		t.Fatalf("archive verify --delete-invalid = %v:\n%s", err, out)
	}
	out, _, err = runArchive(t, "archive", "verify", "--db", path)
	if err != nil || !strings.Contains(out, "4 records: 4 valid, 0 invalid") {
		t.Fatalf("archive verify after deletion = %v:\n%s", err, out)
	}
}

func TestArchiveClear(t *testing.T) {
	path := fillArchive(t, 5, 0)
	out, _, err := runArchive(t, "archive", "clear", "--db", path)
	if err != nil || !strings.Contains(out, "cleared 5 entries") {
		t.Fatalf("archive clear = %v:\n%s", err, out)
	}
	out, _, err = runArchive(t, "archive", "stats", "--db", path)
	if err != nil || !strings.Contains(out, "entries   0 of") {
		t.Fatalf("archive stats after clear = %v:\n%s", err, out)
	}
}

func TestArchiveErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none", "archive.db")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"archive", "stats", "--db", missing}, 1, "no archive database"},
		{[]string{"archive", "verify", "--db", missing}, 1, "no archive database"},
		{[]string{"archive", "clear", "--db", missing}, 1, "no archive database"},
		{[]string{"archive", "stats", "extra"}, 2, "unknown command"},
		{[]string{"archive", "stats", "--nope"}, 2, "unknown flag"},
		{[]string{"archive", "stats", "--db", missing, "--max-entries", "0"}, 2, "must be positive"},
	} {
		_, _, err := runArchive(t, tc.args...)
		if ExitCode(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("rtp %s = %v (exit %d), want exit %d mentioning %q", strings.Join(tc.args, " "), err, ExitCode(err), tc.code, tc.want)
		}
	}
}

func TestArchiveHelp(t *testing.T) {
	out, _, err := runArchive(t, "archive", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"stats", "verify", "clear", "--db", DefaultArchivePath} {
		if !strings.Contains(out, want) {
			t.Errorf("archive --help lacks %q", want)
		}
	}
}

func TestHumanBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"}, {4 << 30, "4.0 GiB"}, {math.MaxInt64, "8.0 EiB"}} {
		if got := humanBytes(tc.n); got != tc.want {
			t.Errorf("humanBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
