package geom

import "fmt"

// Kinds of ShapeSpec.
const (
	ShapeCircle    = "circle"
	ShapeSquare    = "square"
	ShapeRectangle = "rectangle"
)

// ShapeSpec is a region's area as a person writes it: a kind and distances
// in blocks. It is the one description of a region's shape: a
// configuration file's shape section decodes into it (the yaml keys are
// the file's), an engine takes it, and Build turns it into the Shape of
// chunks the rest of the code draws from.
//
// Kind circle and square use Radius and Inner; rectangle uses RadiusX,
// RadiusZ, InnerX, InnerZ and Rotation; each kind ignores the others'
// fields. Its JSON encoding (the field names, no tags) identifies the
// places persisted for a region, so fields keep their names and order.
//
// ShapeSpec has no defaults of its own: the zero value has no kind, which
// Build refuses; whoever makes a ShapeSpec fills in the defaults once. It is
// a plain value, safe to copy and to use concurrently.
type ShapeSpec struct {
	// Kind is ShapeCircle, ShapeSquare or ShapeRectangle.
	Kind string `yaml:"kind"`
	// CenterX and CenterZ are the centre block.
	CenterX int64 `yaml:"center_x"`
	CenterZ int64 `yaml:"center_z"`
	// Radius is the circle's radius or the square's half-width, in
	// blocks.
	Radius int64 `yaml:"radius"`
	// Inner is the radius of the circle's or square's hole, in blocks; 0
	// for none.
	Inner int64 `yaml:"inner"`
	// RadiusX and RadiusZ are the rectangle's half-extents along its own
	// axes, in blocks.
	RadiusX int64 `yaml:"radius_x"`
	RadiusZ int64 `yaml:"radius_z"`
	// InnerX and InnerZ are the rectangle's hole, in blocks; 0 for none.
	InnerX int64 `yaml:"inner_x"`
	InnerZ int64 `yaml:"inner_z"`
	// Rotation turns the rectangle's x axis towards +z, in degrees.
	Rotation float64 `yaml:"rotation"`
}

// Build returns the shape in chunks. The centre is the chunk holding the
// centre block; outer radii (Radius, RadiusX, RadiusZ) convert with
// OuterChunks, inner ones (Inner, InnerX, InnerZ) with InnerChunks. So a
// circle of radius 4096 blocks is one of 256 chunks, radius 100 blocks is
// 6 chunks, and an inner radius of 100 blocks is 7 chunks. Membership is
// then decided between chunk positions (see Circle, Square and Rectangle).
// It fails on an unknown kind and reports every parameter the kind's
// constructor refuses.
func (s ShapeSpec) Build() (Shape, error) {
	c := s.Center()
	switch s.Kind {
	case ShapeCircle:
		return NewCircle(c, OuterChunks(s.Radius), InnerChunks(s.Inner))
	case ShapeSquare:
		return NewSquare(c, OuterChunks(s.Radius), InnerChunks(s.Inner))
	case ShapeRectangle:
		return NewRectangle(RectangleSpec{
			Center:   c,
			RadiusX:  OuterChunks(s.RadiusX),
			RadiusZ:  OuterChunks(s.RadiusZ),
			InnerX:   InnerChunks(s.InnerX),
			InnerZ:   InnerChunks(s.InnerZ),
			Rotation: s.Rotation,
		})
	}
	return nil, fmt.Errorf("geom: unknown shape kind %q (want circle, square or rectangle)", s.Kind)
}

// Center returns the chunk holding the centre block.
func (s ShapeSpec) Center() Chunk { return Block{X: s.CenterX, Z: s.CenterZ}.Chunk() }

// OuterChunks converts an outer radius from blocks to chunks, rounding
// down, and InnerChunks an inner radius, rounding up: measured between
// chunk positions, a shape built from them never reaches past the radius
// written nor into the hole written.
func OuterChunks(blocks int64) int64 { return blocks >> ChunkShift }

// InnerChunks converts an inner radius from blocks to chunks, rounding up
// (see OuterChunks).
func InnerChunks(blocks int64) int64 {
	c := blocks >> ChunkShift
	if blocks&(ChunkSize-1) != 0 {
		c++
	}
	return c
}
