package webmap

import (
	"net/url"
	"strconv"
	"testing"
)

func FuzzParseTilePath(f *testing.F) {
	for _, s := range [][3]string{{"0", "0", "0.png"}, {"8", "-256", "255.png"}, {"9", "0", "0.png"}, {"01", "1", "1.png"}, {"3", "x", "1"}, {"", "", ".png"}} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, zoom, tx, tz string) {
		z, x, y, err := ParseTilePath(zoom, tx, tz)
		if err != nil {
			return
		}
		if z < 0 || z > MaxZoom {
			t.Fatalf("zoom %d accepted", z)
		}
		limit := int64(MaxBlock) / (TileSize << z)
		if x < -limit || x >= limit || y < -limit || y >= limit {
			t.Fatalf("tile %d/%d/%d beyond ±MaxBlock accepted", z, x, y)
		}
		// Accepted input is canonical for the zoom and round-trips.
		if strconv.Itoa(z) != zoom {
			t.Fatalf("zoom %q parsed as %d", zoom, z)
		}
		if z2, x2, y2, err := ParseTilePath(strconv.Itoa(z), strconv.FormatInt(x, 10), strconv.FormatInt(y, 10)+".png"); err != nil || z2 != z || x2 != x || y2 != y {
			t.Fatalf("round trip of %d/%d/%d: %d/%d/%d %v", z, x, y, z2, x2, y2, err)
		}
	})
}

func FuzzParseMemoryRect(f *testing.F) {
	f.Add("minX=0&minZ=0&maxX=10&maxZ=10")
	f.Add("minX=-5&minZ=3&maxX=250&maxZ=258")
	f.Add("minX=0&minZ=0&maxX=256&maxZ=256")
	f.Add("minX=9223372036854775807&minZ=0&maxX=-9223372036854775808&maxZ=1")
	f.Add("minX=&maxZ=%zz")
	f.Fuzz(func(t *testing.T, query string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		r, err := ParseMemoryRect(q.Get)
		if err != nil {
			return
		}
		if n := r.Len(); n < 1 || n > MaxMemoryChunks {
			t.Fatalf("rectangle %+v of %d chunks accepted", r, n)
		}
	})
}

func FuzzParseQuality(f *testing.F) {
	for _, s := range []string{"", "full", "low", "FULL", "medium"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := ParseQuality(s)
		if err == nil && !q.Valid() {
			t.Fatalf("quality %q parsed as invalid %v", s, q)
		}
	})
}
