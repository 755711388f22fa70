package anviltest

import (
	"fmt"
	"slices"
	"strings"
)

// ParseState splits a block state string ("minecraft:oak_slab[type=bottom,
// waterlogged=false]", or without namespace or properties) into its name,
// with the "minecraft:" namespace added when it has none, and its
// properties (nil when it has none).
func ParseState(state string) (name string, props map[string]string, err error) {
	name, rest, hasProps := strings.Cut(strings.TrimSpace(state), "[")
	if name == "" {
		return "", nil, fmt.Errorf("anviltest: block state %q has no name", state)
	}
	if !strings.Contains(name, ":") {
		name = "minecraft:" + name
	}
	if !hasProps {
		return name, nil, nil
	}
	body, ok := strings.CutSuffix(rest, "]")
	if !ok {
		return "", nil, fmt.Errorf("anviltest: block state %q lacks its closing bracket", state)
	}
	if body == "" {
		return name, nil, nil
	}
	props = map[string]string{}
	for kv := range strings.SplitSeq(body, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return "", nil, fmt.Errorf("anviltest: block state %q: property %q is not key=value", state, kv)
		}
		if _, dup := props[k]; dup {
			return "", nil, fmt.Errorf("anviltest: block state %q sets %q twice", state, k)
		}
		props[k] = v
	}
	return name, props, nil
}

// FormatState is the inverse of ParseState: the name, then the properties
// sorted by key in brackets ("minecraft:oak_slab[type=bottom,waterlogged=false]").
func FormatState(name string, props map[string]string) string {
	if len(props) == 0 {
		return name
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('[')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(props[k])
	}
	b.WriteByte(']')
	return b.String()
}

// canonical returns state in FormatState's form.
func canonical(state string) (string, error) {
	name, props, err := ParseState(state)
	if err != nil {
		return "", err
	}
	return FormatState(name, props), nil
}

// IsAir reports whether name is one of the air blocks.
func IsAir(name string) bool {
	switch name {
	case "minecraft:air", "minecraft:cave_air", "minecraft:void_air":
		return true
	}
	return false
}

// fluidNames hold a fluid whatever their properties.
var fluidNames = map[string]bool{
	"minecraft:water": true, "minecraft:lava": true, "minecraft:bubble_column": true,
	"minecraft:seagrass": true, "minecraft:tall_seagrass": true,
	"minecraft:kelp": true, "minecraft:kelp_plant": true,
}

// HoldsFluid reports whether a block state holds a fluid: water, lava and
// the blocks that only exist under water, or any waterlogged=true state.
func HoldsFluid(name string, props map[string]string) bool {
	return fluidNames[name] || props["waterlogged"] == "true"
}

// forcedSolid reports whether the game counts a block as solid, and so as
// blocking motion, although it has no collision: signs of every kind,
// banners, pressure plates and the moving piston.
func forcedSolid(name string) bool {
	n := strings.TrimPrefix(name, "minecraft:")
	return strings.HasSuffix(n, "_sign") || strings.HasSuffix(n, "_banner") ||
		strings.HasSuffix(n, "_pressure_plate") || n == "moving_piston"
}
