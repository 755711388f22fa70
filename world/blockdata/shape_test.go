package blockdata

import "testing"

func TestShapeConstantsMatchGenerator(t *testing.T) {
	if Full != genFull || Partial != genPartial || Empty != 0 {
		t.Fatalf("Full=%d Partial=%d, the generator wrote %d and %d", Full, Partial, genFull, genPartial)
	}
}

func TestShape(t *testing.T) {
	tests := []struct {
		s        Shape
		str      string
		passable bool
		height   int
		floor    bool
		full     bool
	}{
		{Empty, "Empty", true, 0, false, false},
		{Floor(1), "Floor(1)", false, 1, true, false},
		{Floor(8), "Floor(8)", false, 8, true, false},
		{Floor(16), "Floor(16)", false, 16, true, false},
		{Full, "Full", false, 16, true, true},
		{Partial, "Partial", false, 0, false, false},
		{Shape(19), "Shape(19)", false, 0, false, false},
		{Shape(255), "Shape(255)", false, 0, false, false},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.str {
			t.Errorf("String() = %q, want %q", got, tt.str)
		}
		if got := tt.s.Passable(); got != tt.passable {
			t.Errorf("%v.Passable() = %v", tt.s, got)
		}
		if h, ok := tt.s.FloorHeight(); h != tt.height || ok != tt.floor {
			t.Errorf("%v.FloorHeight() = %d, %v; want %d, %v", tt.s, h, ok, tt.height, tt.floor)
		}
		if got := tt.s.FullCube(); got != tt.full {
			t.Errorf("%v.FullCube() = %v", tt.s, got)
		}
	}
}

func TestFloor(t *testing.T) {
	for h := 1; h <= 16; h++ {
		if s := Floor(h); s != Shape(h) {
			t.Errorf("Floor(%d) = %v", h, s)
		}
	}
	for _, h := range []int{0, -1, 17, 1 << 40} {
		if s := Floor(h); s != Partial {
			t.Errorf("Floor(%d) = %v, want Partial", h, s)
		}
	}
}
