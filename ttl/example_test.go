package ttl_test

import (
	"fmt"
	"strings"

	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/ttl"
)

func ExampleLoad() {
	p, err := ttl.Load(strings.NewReader(`
causes:
  safetyExternal: 7d
verifiers:
  WorldGuardChecker: -1
  GriefPreventionChecker: 14d
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, source := range []string{"WorldGuardChecker", "GriefPreventionChecker", "TownyChecker"} {
		d, rule := p.Resolve(memory.CauseSafetyExternal, source)
		fmt.Printf("%s: %v (%v)\n", source, ttl.Duration(d), rule)
	}
	fmt.Println(p.TTL(memory.CauseUniquePlacement, ""))
	// Output:
	// WorldGuardChecker: -1 (verifiers)
	// GriefPreventionChecker: 14d (verifiers)
	// TownyChecker: 7d (causes)
	// 720h0m0s
}

func ExampleLoad_errors() {
	_, err := ttl.Load(strings.NewReader(`causes:
  biome: 30d
  timeout: 5s
  lava: -1
`))
	fmt.Println(err)
	// Output:
	// ttl.yml:2: causes.biome: static cause never expires; use -1
	// ttl.yml:3: causes.timeout: transient cause is never stored; use 0
	// ttl.yml:4: causes.lava: unknown cause (causes: biome, worldBorder, vert, safety, safetyExternal, uniquePlacement, timeout, nullChunk, ungenerated, prefilterBiome, prefilterRange, unreadable)
}

func ExampleParseDuration() {
	for _, s := range []string{"1w2d3h", "20t", "3600", "-1", "1h1d"} {
		d, err := ttl.ParseDuration(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s = %v\n", s, d)
	}
	// Output:
	// 1w2d3h = 9d3h
	// 20t = 1s
	// 3600 = 1h
	// -1 = -1
	// ttl: invalid duration "1h1d": unit "d" after "h"; write units largest first (w, d, h, m, s, t, ms)
}
