package archive_test

import (
	"errors"
	"math"
	"testing"

	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/terrain/archive"
)

func TestPayloadRoundTrip(t *testing.T) {
	for _, req := range []terrain.Request{
		req0,
		{Size: 1, Resolution: 1},
		{OriginX: math.MaxInt64 - 100, OriginZ: math.MinInt64, Size: 4096, Resolution: 33, Border: 3},
	} {
		want := makeTile(req, 3)
		p := archive.EncodeTile(want)
		got, err := archive.DecodeTile(p)
		if err != nil {
			t.Fatalf("DecodeTile(EncodeTile(%v)) error %v", req, err)
		}
		if err := got.Validate(req); err != nil {
			t.Fatalf("decoded tile invalid: %v", err)
		}
		if !sameTile(got, want) {
			t.Fatalf("DecodeTile(EncodeTile(%v)) differs", req)
		}
		// Elevations and Water share one allocation: appending to the
		// elevations must not overwrite the water.
		w0 := math.Float32bits(got.Water[0])
		_ = append(got.Elevations, 12345)
		if math.Float32bits(got.Water[0]) != w0 {
			t.Fatalf("appending to Elevations changed Water")
		}
	}
}

func TestDecodeTileRejectsEveryCorruption(t *testing.T) {
	good := archive.EncodeTile(makeTile(req0, 1))
	for cut := range len(good) {
		if _, err := archive.DecodeTile(good[:cut]); !errors.Is(err, archive.ErrCorrupt) {
			t.Fatalf("DecodeTile of %d/%d bytes = %v, want %v", cut, len(good), err, archive.ErrCorrupt)
		}
	}
	for i := range len(good) {
		for _, bit := range []byte{0x01, 0x80} {
			p := append([]byte(nil), good...)
			p[i] ^= bit
			if _, err := archive.DecodeTile(p); !errors.Is(err, archive.ErrCorrupt) {
				t.Fatalf("DecodeTile with byte %d flipped by %#x = %v, want %v", i, bit, err, archive.ErrCorrupt)
			}
		}
	}
	if _, err := archive.DecodeTile(append(good, 0)); !errors.Is(err, archive.ErrCorrupt) {
		t.Fatalf("DecodeTile with a trailing byte = %v", err)
	}
}

func TestVerify(t *testing.T) {
	src := newFake()
	key, _ := archive.EncodeKey(src.Producer(), src.Params(), req0)
	good := archive.Record{Digest: archive.DigestOf(key), Key: key, Payload: archive.EncodeTile(makeTile(req0, 7))}
	k, tile, err := archive.Verify(good)
	if err != nil || k.Request != req0 || k.Producer != src.Producer() || tile == nil {
		t.Fatalf("Verify(good) = %+v, %v", k, err)
	}
	for _, tc := range corruptions {
		r := tc.fn(archive.Record{Digest: good.Digest, Key: append([]byte(nil), good.Key...), Payload: append([]byte(nil), good.Payload...)}, src)
		if _, _, err := archive.Verify(r); err == nil {
			t.Errorf("Verify(%s) succeeded", tc.name)
		}
	}
	bad := good
	bad.Digest[0] ^= 1
	if _, _, err := archive.Verify(bad); err == nil {
		t.Errorf("Verify with a wrong digest succeeded")
	}
	bad = good
	bad.Key = []byte("not a key")
	if _, _, err := archive.Verify(bad); err == nil {
		t.Errorf("Verify with a foreign key succeeded")
	}
}

// The decoder never panics, allocates in proportion to its input, and
// whatever it accepts re-encodes to the same bytes.
func FuzzDecodeTile(f *testing.F) {
	f.Add(archive.EncodeTile(makeTile(req0, 1)))
	f.Add(archive.EncodeTile(makeTile(terrain.Request{Size: 1, Resolution: 1}, 2)))
	f.Add([]byte{})
	f.Add([]byte("RTPT\x01"))
	f.Fuzz(func(t *testing.T, p []byte) {
		tile, err := archive.DecodeTile(p)
		if err != nil {
			if !errors.Is(err, archive.ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if n := len(tile.Elevations) + len(tile.Water) + len(tile.Cover); n > len(p) {
			t.Fatalf("%d samples from %d bytes", n, len(p))
		}
		if again := archive.EncodeTile(tile); string(again) != string(p) {
			t.Fatalf("re-encoding differs from the accepted input")
		}
		_ = tile.Validate(tile.Request) // must not panic either
	})
}

func FuzzParseKey(f *testing.F) {
	key, _ := archive.EncodeKey(terrain.Producer{Name: "fake", Version: "1"}, defaultFakeParams(), req0)
	f.Add(key)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := archive.ParseKey(b)
		if err != nil {
			return
		}
		if len(k.Params) > len(b) || len(k.Producer.Name)+len(k.Producer.Version) > len(b) {
			t.Fatalf("decoded more than the input holds")
		}
	})
}
