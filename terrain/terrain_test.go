package terrain

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestRequestValidate(t *testing.T) {
	for _, tc := range []struct {
		req  Request
		want []string // substrings of the error; none for a valid request
	}{
		{Request{Size: 256, Resolution: 64, Border: 1}, nil},
		{Request{OriginX: -1 << 40, Size: 1, Resolution: 1}, nil},
		{Request{}, []string{"size 0", "resolution 0"}},
		{Request{Size: 16, Resolution: MaxResolution + 1, Border: -1}, []string{"resolution", "border -1"}},
		{Request{Size: 16, Resolution: 4, Border: MaxBorder + 1}, []string{"border"}},
	} {
		err := tc.req.Validate()
		if len(tc.want) == 0 {
			if err != nil {
				t.Errorf("%v.Validate() = %v, want nil", tc.req, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%v.Validate() = nil, want errors mentioning %q", tc.req, tc.want)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v.Validate() = %q, want it to mention %q", tc.req, err, w)
			}
		}
	}
}

func validTile() (*Tile, Request) {
	req := Request{Size: 32, Resolution: 4, Border: 1}
	side := req.Side()
	t := &Tile{Request: req, Elevations: make([]float32, side*side), Water: make([]float32, 16), Cover: make([]Cover, 16)}
	for i := range t.Elevations {
		t.Elevations[i] = float32(i)
	}
	for i := range t.Water {
		t.Water[i] = float32(math.NaN())
	}
	t.Water[3] = 12
	t.Min, t.Max = t.Interior(0, 0), t.Interior(3, 3)
	return t, req
}

func TestTileValidate(t *testing.T) {
	good, req := validTile()
	if err := good.Validate(req); err != nil {
		t.Fatalf("Validate() of a valid tile = %v", err)
	}
	for name, mutate := range map[string]func(*Tile){
		"other request":   func(t *Tile) { t.Request.OriginX = 1 },
		"short elevation": func(t *Tile) { t.Elevations = t.Elevations[1:] },
		"short water":     func(t *Tile) { t.Water = t.Water[1:] },
		"short cover":     func(t *Tile) { t.Cover = t.Cover[1:] },
		"NaN elevation":   func(t *Tile) { t.Elevations[0] = float32(math.NaN()) },
		"Inf border":      func(t *Tile) { t.Elevations[1] = float32(math.Inf(1)) },
		"Inf water":       func(t *Tile) { t.Water[0] = float32(math.Inf(-1)) },
		"unknown cover":   func(t *Tile) { t.Cover[2] = Cover(NumCovers) },
		"wrong min":       func(t *Tile) { t.Min-- },
		"wrong max":       func(t *Tile) { t.Max++ },
		"border extreme":  func(t *Tile) { t.Max = t.Elevations[len(t.Elevations)-1] },
	} {
		tile, req := validTile()
		mutate(tile)
		if err := tile.Validate(req); !errors.Is(err, ErrInvalidTile) {
			t.Errorf("%s: Validate() = %v, want ErrInvalidTile", name, err)
		}
	}
	var nilTile *Tile
	if err := nilTile.Validate(req); !errors.Is(err, ErrInvalidTile) {
		t.Errorf("nil tile: Validate() = %v, want ErrInvalidTile", err)
	}
}

func TestNames(t *testing.T) {
	if got := CoverLava.String(); got != "lava" {
		t.Errorf("CoverLava.String() = %q", got)
	}
	if got := Cover(200).String(); got != "cover(200)" {
		t.Errorf("Cover(200).String() = %q", got)
	}
	if got := (Producer{"procgen", "3"}).String(); got != "procgen@3" {
		t.Errorf("Producer.String() = %q", got)
	}
}
