package main

import "math"

// Shape classes as the generated tables store them. The numbers are the
// values of blockdata.Shape: 0 is Empty, 1..16 a full floor that many
// sixteenths high, then Full and Partial.
const (
	classEmpty   = 0
	classFull    = 17
	classPartial = 18
)

// grid is the resolution of the rasteriser: every real coordinate in the
// data is a multiple of 1/16.
const grid = 16

// eps absorbs the data's floating-point noise (coordinates are written as
// decimals such as 0.0625 or 0.09375).
const eps = 1e-6

// box is one collision box [x1, y1, z1, x2, y2, z2] in block units.
type box [6]float64

// classify reduces a collision shape (a union of boxes) to its class.
//
// A shape without boxes is Empty. One whose boxes stay inside the unit
// cube and fill all of it is Full. Otherwise, when the highest point of
// the shape is h/16 for h in 1..16 and the boxes reaching that height
// cover the whole 1x1 top face, it is a floor of height h. Everything else
// (stairs, fences and walls 1.5 high, inset boxes, fractional tops) is
// Partial. Coverage rounds each box inward to the 1/16 grid, so a box that
// only partly covers a cell does not count for it.
func classify(boxes []box) uint8 {
	if len(boxes) == 0 {
		return classEmpty
	}
	if fullCube(boxes) {
		return classFull
	}
	top := math.Inf(-1)
	for _, b := range boxes {
		top = math.Max(top, b[4])
	}
	h16 := top * grid
	h := math.Round(h16)
	if math.Abs(h16-h) > eps || h < 1 || h > grid {
		return classPartial
	}
	var face [grid][grid]bool
	for _, b := range boxes {
		if math.Abs(b[4]-top) > eps {
			continue
		}
		x0, x1 := inward(b[0], b[3])
		z0, z1 := inward(b[2], b[5])
		for x := x0; x < x1; x++ {
			for z := z0; z < z1; z++ {
				face[x][z] = true
			}
		}
	}
	for x := range face {
		for z := range face[x] {
			if !face[x][z] {
				return classPartial
			}
		}
	}
	return uint8(h)
}

// fullCube reports whether the boxes stay inside the unit cube and their
// union fills it.
func fullCube(boxes []box) bool {
	var cells [grid][grid][grid]bool
	for _, b := range boxes {
		for _, c := range b {
			if c < -eps || c > 1+eps {
				return false
			}
		}
		x0, x1 := inward(b[0], b[3])
		y0, y1 := inward(b[1], b[4])
		z0, z1 := inward(b[2], b[5])
		for x := x0; x < x1; x++ {
			for y := y0; y < y1; y++ {
				for z := z0; z < z1; z++ {
					cells[x][y][z] = true
				}
			}
		}
	}
	for x := range cells {
		for y := range cells[x] {
			for z := range cells[x][y] {
				if !cells[x][y][z] {
					return false
				}
			}
		}
	}
	return true
}

// inward returns the grid cells [lo, hi) that the span [a, b] covers
// completely, clamped to the block.
func inward(a, b float64) (lo, hi int) {
	lo = int(math.Ceil(a*grid - eps))
	hi = int(math.Floor(b*grid + eps))
	lo = max(lo, 0)
	hi = min(hi, grid)
	if hi < lo {
		hi = lo
	}
	return lo, hi
}
