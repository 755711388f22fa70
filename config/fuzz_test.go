package config

import (
	"bytes"
	"os"
	"testing"
)

// FuzzLoad: Load never panics, is deterministic, returns either a valid
// Config or only *LineError problems naming the file.
func FuzzLoad(f *testing.F) {
	for _, tc := range badFiles {
		f.Add([]byte(tc.text))
	}
	for _, name := range []string{"rtp.example.yml", "loadtest.example.yml"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("regions:\n  a: &a {<<: *a}\n"))
	f.Add([]byte("regions: &r\n  a: {<<: *r}\n"))
	f.Add([]byte("worlds: {w: {kind: minecraft, path: /}}\nregions: {r: {world: w}}\n"))
	f.Add([]byte("verifiers: [{name: a, kind: http, url: 'http://h', regions: [default]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Load(bytes.NewReader(data), "f.yml")
		c2, err2 := Load(bytes.NewReader(data), "f.yml")
		if (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() {
			t.Fatalf("Load is not deterministic: %v, then %v", err, err2)
		}
		if err != nil {
			if c != nil {
				t.Fatalf("Load returned a Config with error %v", err)
			}
			if len(data) > MaxFileSize {
				return
			}
			for _, e := range unjoin(err) {
				le, ok := e.(*LineError)
				if !ok || le.File != "f.yml" || le.Line < 0 || le.Msg == "" {
					t.Fatalf("problem %q (%T) is not a *LineError of f.yml", e, e)
				}
			}
			return
		}
		if c == nil || c2 == nil {
			t.Fatal("Load returned neither a Config nor an error")
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Load accepted a Config that Validate rejects: %v", err)
		}
		for name, r := range c.Regions {
			if _, err := r.BuildDistribution(); err != nil {
				t.Fatalf("region %s: BuildDistribution = %v after a clean Load", name, err)
			}
		}
	})
}
