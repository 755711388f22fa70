package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShapeProblemsText: the problems of shapes, as Load and CheckFile
// report them, keep their keys, lines and words.
func TestShapeProblemsText(t *testing.T) {
	const file = `regions:
  a:
    shape: {kind: hexagon}
  b:
    shape: {kind: circle, center_x: 99999999999, radius: -1, inner: 5}
  c:
    shape: {kind: square, radius: 100, inner: 100}
  d:
    shape: {kind: rectangle, radius_x: 500, radius_z: 40, inner_x: 10, rotation: .nan}
  e:
    shape: {kind: rectangle, radius_x: 500, radius_z: 40, inner_x: 490, inner_z: 48}
  f:
    shape: {kind: circle, radius_x: 7, rotation: 3}
  g:
    shape: {kind: rectangle, radius: 7, inner: 1}
  h:
    shape: {radiuss: 7}
`
	// Valid shapes build.
	const valid = `regions:
  a:
    shape: {kind: rectangle, radius_x: 3000, radius_z: 800, inner_x: 400, inner_z: 40, rotation: 45}
  b:
    shape: {kind: square, center_x: -8, center_z: 100, radius: 1000, inner: 100}
`
	const want = `rtp.yml:3: regions.a.shape.kind: unknown shape kind "hexagon": want circle, square or rectangle
rtp.yml:5: regions.b.shape.center_x: 99999999999 blocks: want -68719476736 to 68719476736
rtp.yml:5: regions.b.shape.radius: -1 blocks: want 0 to 33554432
rtp.yml:7: regions.c.shape.inner: 100 blocks (7 chunks) is not less than radius 100 blocks (6 chunks): the hole must be smaller than the shape
rtp.yml:9: regions.d.shape.inner_x: inner_x 10 and inner_z 0: a rectangle's hole needs both (or neither)
rtp.yml:9: regions.d.shape.rotation: NaN: want a finite number of degrees
rtp.yml:11: regions.e.shape.inner_x: 490 blocks (31 chunks) is not less than radius_x 500 blocks (31 chunks): the hole must be smaller than the shape
rtp.yml:11: regions.e.shape.inner_z: 48 blocks (3 chunks) is not less than radius_z 40 blocks (2 chunks): the hole must be smaller than the shape
rtp.yml:13: regions.f.shape.radius_x: only used by the rectangle shape (kind is circle)
rtp.yml:13: regions.f.shape.rotation: only used by the rectangle shape (kind is circle)
rtp.yml:15: regions.g.shape.radius: only used by the circle and square shapes (kind is rectangle)
rtp.yml:15: regions.g.shape.inner: only used by the circle and square shapes (kind is rectangle)
rtp.yml:17: regions.h.shape.radiuss: unknown key (want kind, center_x, center_z, radius, inner, radius_x, radius_z, inner_x, inner_z, rotation)`
	dir := t.TempDir()
	path := filepath.Join(dir, "rtp.yml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, load := range map[string]func() error{
		"Load":      func() error { _, err := LoadFile(path); return err },
		"CheckFile": func() error { _, err := CheckFile(path); return err },
	} {
		err := load()
		if err == nil {
			t.Fatalf("%s accepted the file", name)
		}
		if got := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""); got != want {
			t.Errorf("%s =\n%s\nwant\n%s", name, got, want)
		}
	}
	if err := os.WriteFile(path, []byte(valid), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckFile(path); err != nil {
		t.Errorf("CheckFile(valid shapes) = %v", err)
	}
}
