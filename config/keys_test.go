package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadFileKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rtp.yml")
	text := `regions:
  default:
    pulse: 100ms
  north-2:
    shape:
      radius: 512
  empty:
    shape:
`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c, keys, err := LoadFileKeys(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Regions) != 3 || c.Regions["north-2"].Shape.Radius != 512 {
		t.Fatalf("LoadFileKeys config: %+v", c.Regions)
	}
	for _, k := range []struct {
		path []string
		want bool
	}{
		{[]string{"regions"}, true},
		{[]string{"regions", "default"}, true},
		{[]string{"regions", "default", "pulse"}, true},
		{[]string{"regions", "default", "shape"}, false}, // the default, not written
		{[]string{"regions", "north-2", "shape"}, true},
		{[]string{"regions", "north-2", "shape", "radius"}, true},
		{[]string{"regions", "north-2", "shape", "center_x"}, false},
		{[]string{"regions", "empty", "shape"}, true},
		{[]string{"server"}, false},
		{nil, false},
	} {
		if got := keys.Has(k.path...); got != k.want {
			t.Errorf("Has(%q) = %v, want %v", k.path, got, k.want)
		}
	}
	if (Keys{}).Has("regions") {
		t.Error("the zero Keys has a key")
	}
	if _, _, err := LoadFileKeys(filepath.Join(t.TempDir(), "missing.yml")); err == nil {
		t.Error("LoadFileKeys of a missing file succeeded")
	}
}
