package cli

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTerrainRender(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "map.png")
	var stdout, stderr bytes.Buffer
	// Centred on a coast with rivers and lakes (see procgen's wet
	// fingerprint area); 4 blocks per pixel.
	args := []string{"terrain", "render", "--seed", "0", "--x", "1408", "--z", "1152", "--size", "1024", "--resolution", "256", "--out", out}
	if err := Run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("Run(%q) = %v; stderr %q", args, err, stderr.String())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decoding %s: %v", out, err)
	}
	if b := img.Bounds(); b.Dx() != 256 || b.Dy() != 256 {
		t.Fatalf("image is %v, want 256x256", b)
	}
	colours := map[[3]uint32]bool{}
	var blue, green int
	for y := range 256 {
		for x := range 256 {
			r, g, b, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, b >> 8}] = true
			switch {
			case b > r && b > g:
				blue++ // water
			case g > r && g > b:
				green++ // vegetated land
			}
		}
	}
	if len(colours) < 50 {
		t.Errorf("only %d distinct colours; want a shaded map", len(colours))
	}
	if blue < 256*256/50 || green < 256*256/50 {
		t.Errorf("%d water-blue and %d land-green pixels; want both visible", blue, green)
	}
	if !strings.Contains(stdout.String(), "wrote "+out) {
		t.Errorf("stdout = %q, want it to name the file", stdout.String())
	}
	// No temporary files are left beside the image.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only map.png", len(entries))
	}
}

func TestTerrainRenderErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		args  []string
		usage bool
	}{
		{"no out", []string{"terrain", "render", "--size", "64"}, true},
		{"bad flag", []string{"terrain", "render", "--size", "big", "--out", filepath.Join(dir, "a.png")}, true},
		{"zero size", []string{"terrain", "render", "--size", "0", "--out", filepath.Join(dir, "b.png")}, true},
		{"span too big", []string{"terrain", "render", "--size", "100000", "--resolution", "8", "--out", filepath.Join(dir, "c.png")}, false},
		{"missing directory", []string{"terrain", "render", "--size", "16", "--out", filepath.Join(dir, "nope", "d.png")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := Run(context.Background(), tc.args, &stdout, &stderr)
			if err == nil {
				t.Fatalf("Run(%q) = nil, want an error", tc.args)
			}
			var u usageError
			if errors.As(err, &u) != tc.usage {
				t.Errorf("Run(%q) = %v; usage error %v, want %v", tc.args, err, !tc.usage, tc.usage)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed renders left %d files behind", len(entries))
	}
}
