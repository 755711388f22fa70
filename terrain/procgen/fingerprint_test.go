package procgen

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"math"
	"testing"

	"github.com/rtpengine/rtp/terrain"
)

// The reference tiles, found by TestFindFingerprintAreas (run with
// -procgen.search). The dry one is land with no water anywhere and touches
// the corner where four drainage cells blend; the wet one holds ocean, river,
// lake, volcanic rock and lava, so its hash covers the drainage graph.
var (
	fingerprintDryRequest = terrain.Request{OriginX: 768, OriginZ: 1024, Size: 256, Resolution: 64, Border: 1}
	fingerprintWetRequest = terrain.Request{OriginX: 1280, OriginZ: 1024, Size: 256, Resolution: 64, Border: 1}
)

// fingerprint is the SHA-256 of a tile's elevation, water and cover arrays
// in little-endian followed by Min and Max. NaN water is hashed as the
// canonical quiet NaN, whatever its payload.
func fingerprint(t *terrain.Tile) string {
	h := sha256.New()
	buf := make([]byte, 0, 4*len(t.Elevations))
	for _, e := range t.Elevations {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(e))
	}
	h.Write(buf)
	buf = buf[:0]
	for _, w := range t.Water {
		bits := math.Float32bits(w)
		if w != w {
			bits = 0x7fc00000
		}
		buf = binary.LittleEndian.AppendUint32(buf, bits)
	}
	h.Write(buf)
	buf = buf[:0]
	for _, c := range t.Cover {
		buf = append(buf, byte(c))
	}
	buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(t.Min))
	buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(t.Max))
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil))
}

func coverCounts(t *terrain.Tile) (counts [terrain.NumCovers]int, wet int) {
	for k, c := range t.Cover {
		counts[c]++
		if !math.IsNaN(float64(t.Water[k])) {
			wet++
		}
	}
	return counts, wet
}

// TestFingerprint fails whenever the generator's arithmetic changes. That
// is its purpose: archived tiles are keyed by Version, so a change in
// output without a new Version would let stale tiles answer for new ones.
func TestFingerprint(t *testing.T) {
	g := shared(t)
	dry := mustTile(t, g, fingerprintDryRequest)
	wet := mustTile(t, g, fingerprintWetRequest)

	// The reference areas must still be what they claim to be.
	dc, dwet := coverCounts(dry)
	if dwet != 0 || dc[terrain.CoverOcean]+dc[terrain.CoverRiver]+dc[terrain.CoverLake] != 0 {
		t.Errorf("dry reference %v has %d wet samples", fingerprintDryRequest, dwet)
	}
	wc, _ := coverCounts(wet)
	if wc[terrain.CoverRiver] == 0 || wc[terrain.CoverLake]+wc[terrain.CoverOcean] == 0 {
		t.Errorf("wet reference %v lacks rivers and lakes or ocean: %v", fingerprintWetRequest, wc)
	}

	gotDry, gotWet := fingerprint(dry), fingerprint(wet)
	if gotDry != fingerprintDry || gotWet != fingerprintWet {
		t.Fatalf("procgen arithmetic changed: bump procgen.Version and re-pin the fingerprints\n"+
			"\tfingerprintDry = %q\n\tfingerprintWet = %q", gotDry, gotWet)
	}
}

var search = flag.Bool("procgen.search", false, "search the test area for fingerprint reference tiles")

// TestFindFingerprintAreas lists candidate reference tiles: dry land with
// varied covers, and tiles with river, lake and ocean together.
func TestFindFingerprintAreas(t *testing.T) {
	if !*search {
		t.Skip("a search tool, not a test: run with -procgen.search")
	}
	g := shared(t)
	for z := int64(-testArea); z < testArea; z += 256 {
		for x := int64(-testArea); x < testArea; x += 256 {
			req := terrain.Request{OriginX: x, OriginZ: z, Size: 256, Resolution: 64, Border: 1}
			tile := mustTile(t, g, req)
			c, wet := coverCounts(tile)
			kinds := 0
			for _, n := range c {
				if n > 0 {
					kinds++
				}
			}
			switch {
			case wet == 0 && kinds >= 2 && tile.Max-tile.Min > 10:
				t.Logf("dry: %v covers %d relief %.0f %v", req, kinds, tile.Max-tile.Min, c)
			case c[terrain.CoverRiver] > 20 && c[terrain.CoverLake] > 20 && c[terrain.CoverOcean] > 20:
				t.Logf("wet: %v %v", req, c)
			}
		}
	}
}
