package diskspace

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestOf(t *testing.T) {
	u, err := Of(t.TempDir())
	if errors.Is(err, ErrUnsupported) {
		t.Skip("this system cannot tell its free space")
	}
	if err != nil {
		t.Fatal(err)
	}
	if u.Total == 0 || u.Free > u.Total {
		t.Errorf("Of(temp dir) = %+v, want 0 < Free <= Total", u)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	if _, err := Of(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Of(%s) = %v, want not exist", missing, err)
	}
}

func TestFloor(t *testing.T) {
	gib := Usage{Total: 1 << 30}
	for _, tc := range []struct {
		name    string
		u       Usage
		percent float64
		bytes   int64
		want    uint64
	}{
		{"percent smaller", gib, 5, 256 << 20, 53687091},
		{"bytes smaller", Usage{Total: 1 << 40}, 5, 256 << 20, 256 << 20},
		{"only percent", gib, 10, 0, 107374182},
		{"only bytes", gib, 0, 1000, 1000},
		{"neither", gib, 0, 0, 0},
		{"small disk", Usage{Total: 2 << 20}, 5, 256 << 20, 104857},
	} {
		if got := Floor(tc.u, tc.percent, tc.bytes); got != tc.want {
			t.Errorf("%s: Floor(%+v, %v, %d) = %d, want %d", tc.name, tc.u, tc.percent, tc.bytes, got, tc.want)
		}
	}
}
