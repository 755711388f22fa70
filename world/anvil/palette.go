package anvil

import (
	"bytes"
	"slices"
	"strings"
	"sync"

	"github.com/rtpengine/rtp/world"
)

// stateInfo is a resolved block state: its interned ID and its class.
type stateInfo struct {
	id    world.BlockID
	class class
}

// biomeRef is a resolved biome.
type biomeRef = world.BiomeID

// nameCache maps raw palette entries (the bytes of a block-state compound or
// of a biome name, exactly as stored) to what they resolve to, so a palette
// entry seen before costs one map lookup and no allocation. Different
// spellings of one state (property order) are different keys with the same
// value. The cache stops growing at max entries (hostile worlds can hold any
// number of made-up names); past that, entries are resolved every time.
type nameCache[V any] struct {
	mu  sync.RWMutex // protects m
	m   map[string]V
	max int
}

func newNameCache[V any](max int) *nameCache[V] {
	return &nameCache[V]{m: make(map[string]V), max: max}
}

func (c *nameCache[V]) get(key []byte) (V, bool) {
	c.mu.RLock()
	v, ok := c.m[string(key)]
	c.mu.RUnlock()
	return v, ok
}

func (c *nameCache[V]) put(key []byte, v V) {
	if len(key) > maxCacheKey {
		return // no real palette entry is this long
	}
	c.mu.Lock()
	if len(c.m) < c.max {
		c.m[string(key)] = v
	}
	c.mu.Unlock()
}

// Cache bounds: the game has about 30,000 block states and 100 biomes, and
// a state's compound is well under 256 bytes. At most 64 MiB of keys.
const (
	maxStateCache = 1 << 16
	maxBiomeCache = 1 << 12
	maxCacheKey   = 1 << 10
)

var (
	stateCache = newNameCache[stateInfo](maxStateCache)
	biomeCache = newNameCache[world.BiomeID](maxBiomeCache)
)

// resolveState resolves one block-state compound payload (Name and optional
// Properties).
func resolveState(raw []byte) (stateInfo, error) {
	if v, ok := stateCache.get(raw); ok {
		return v, nil
	}
	name, err := stateName(raw)
	if err != nil {
		return stateInfo{}, err
	}
	v := stateInfo{id: internBlock(name), class: classify(name)}
	stateCache.put(raw, v)
	return v, nil
}

// stateName builds the canonical state name of world.BlockID: the
// namespaced name, then the properties sorted by key in brackets.
func stateName(raw []byte) (string, error) {
	c := cursor{b: raw}
	var name []byte
	hasName := false
	var props [][2][]byte
	for {
		t, key, err := c.header()
		if err != nil {
			return "", err
		}
		if t == tagEnd {
			break
		}
		switch {
		case t == tagString && string(key) == "Name":
			if name, err = c.str(); err != nil {
				return "", err
			}
			hasName = true
		case t == tagCompound && string(key) == "Properties":
			for {
				pt, pk, err := c.header()
				if err != nil {
					return "", err
				}
				if pt == tagEnd {
					break
				}
				if pt != tagString {
					if err := c.skip(pt, 2); err != nil {
						return "", err
					}
					continue
				}
				pv, err := c.str()
				if err != nil {
					return "", err
				}
				props = append(props, [2][]byte{pk, pv})
			}
		default:
			if err := c.skip(t, 1); err != nil {
				return "", err
			}
		}
	}
	if !hasName || len(name) == 0 {
		return "", corrupt("block state without a name")
	}
	var sb strings.Builder
	if bytes.IndexByte(name, ':') < 0 {
		sb.WriteString("minecraft:")
	}
	sb.Write(name)
	if len(props) > 0 {
		slices.SortFunc(props, func(a, b [2][]byte) int { return bytes.Compare(a[0], b[0]) })
		sb.WriteByte('[')
		for i, kv := range props {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.Write(kv[0])
			sb.WriteByte('=')
			sb.Write(kv[1])
		}
		sb.WriteByte(']')
	}
	return sb.String(), nil
}

// resolveBiome resolves one biome name.
func resolveBiome(raw []byte) world.BiomeID {
	if v, ok := biomeCache.get(raw); ok {
		return v
	}
	name := string(raw)
	if !strings.Contains(name, ":") {
		name = "minecraft:" + name
	}
	v := internBiome(name)
	biomeCache.put(raw, v)
	return v
}

// The process-wide name tables never shrink, and a hostile world could hold
// any number of made-up names. Past maxNames distinct names, a name not yet
// known resolves to OverflowBlock or OverflowBiome instead of growing them.
const maxNames = 1 << 18

// Names that stand in for names past the bound.
const (
	OverflowBlock = "rtp:unknown_block"
	OverflowBiome = "rtp:unknown_biome"
)

func internBlock(name string) world.BlockID {
	if id, ok := world.Blocks.Lookup(name); ok {
		return world.BlockID(id)
	}
	if world.Blocks.Len() >= maxNames {
		return world.Block(OverflowBlock)
	}
	return world.Block(name)
}

func internBiome(name string) world.BiomeID {
	if id, ok := world.Biomes.Lookup(name); ok {
		return world.BiomeID(id)
	}
	if world.Biomes.Len() >= maxNames {
		return world.Biome(OverflowBiome)
	}
	return world.Biome(name)
}
