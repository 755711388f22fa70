// Package memory is the spatial memory of rejected places: cause-tagged
// run-length intervals over a shape's spiral index, so random selection can
// skip places already known to be bad, and places rejected for dynamic
// reasons (claims, placement spacing) come back on their own.
package memory
