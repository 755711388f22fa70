package mesh

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rtpengine/rtp/terrain"
)

// FuzzDecode: Decode never panics; whatever it accepts is a valid mesh whose
// re-encoding decodes back within the encoding's error. Each input is also
// tried with its checksum recomputed, so mutations reach the checks behind
// the CRC instead of all failing on it.
func FuzzDecode(f *testing.F) {
	f.Add(smallEncoding(f))
	if b, err := os.ReadFile(filepath.Join("testdata", "golden_v1.mesh")); err == nil {
		f.Add(b)
	}
	for _, step := range []int{1, 2} {
		b, err := Encode(mustBuild(f, makeTile(terrain.Request{OriginX: -9, Size: 10, Resolution: 5, Border: 1}, hills), step))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	empty, err := Encode(&Mesh{Quality: Low})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(empty)
	f.Add([]byte("RTPM"))
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		for _, in := range [][]byte{data, fixCRC(data)} {
			m, err := Decode(in)
			if err != nil {
				if m != nil {
					t.Fatalf("Decode returned a mesh and error %v", err)
				}
				continue
			}
			if err := m.Validate(); err != nil {
				t.Fatalf("Decode accepted an invalid mesh: %v", err)
			}
			again, err := Encode(m)
			if err != nil {
				t.Fatalf("Encode(decoded mesh): %v", err)
			}
			m2, err := Decode(again)
			if err != nil {
				t.Fatalf("Decode(Encode(decoded mesh)): %v", err)
			}
			if err := closeEnough(m, m2); err != nil {
				t.Fatalf("round trip of a decoded mesh: %v", err)
			}
		}
	})
}
