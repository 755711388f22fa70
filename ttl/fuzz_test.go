package ttl

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func FuzzParseDuration(f *testing.F) {
	for _, tc := range validDurations {
		f.Add(tc.in)
	}
	for _, tc := range invalidDurations {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			if d != 0 {
				t.Errorf("ParseDuration(%q) = %v with error %v, want 0", s, d, err)
			}
			return
		}
		if d < 0 && d != Permanent {
			t.Errorf("ParseDuration(%q) = %d, want -1 or not negative", s, int64(d))
		}
		back, err := ParseDuration(d.String())
		if err != nil || back != d {
			t.Errorf("ParseDuration(%q) = %d, %v, want %d (String of ParseDuration(%q))", d.String(), int64(back), err, int64(d), s)
		}
	})
}

func FuzzLoad(f *testing.F) {
	for _, text := range validFiles {
		f.Add([]byte(text))
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "*.yml"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("causes: &c {biome: *c}\n"))
	f.Add([]byte("causes:\n  biome: -1\n   vert: -1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Load(bytes.NewReader(data))
		if err != nil {
			if p != nil {
				t.Errorf("Load returned a policy with error %v", err)
			}
			return
		}
		out, err := p.Marshal()
		if err != nil {
			t.Fatalf("Marshal() = %v", err)
		}
		back, err := Load(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("Load(Marshal()) = %v\ninput:\n%q\nmarshalled:\n%s", err, data, out)
		}
		if !back.Equal(p) {
			t.Fatalf("Load(Marshal()) differs\ninput:\n%q\nmarshalled:\n%s", data, out)
		}
	})
}
