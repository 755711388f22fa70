package safety_test

import (
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/world"
)

// FuzzRules decodes arbitrary YAML into Rules: Validate never panics, and
// rules it accepts compile and check a chunk without panicking.
func FuzzRules(f *testing.F) {
	f.Add([]byte(sampleYAML))
	f.Add([]byte("vertical: {strategy: fixed, y: 3}\nheadroom: 16\n"))
	f.Add([]byte("vertical: {strategy: jump, direction: up, step: 1, start: -100}\nmin_y: -5\nmax_y: -5\n"))
	f.Add([]byte("unsafe: [\"water[level=\"]\nborder: {size: -1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r safety.Rules
		if yaml.Unmarshal(data, &r) != nil {
			return
		}
		err := r.Validate()
		k, err2 := safety.New(r)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("Validate = %v but New = %v", err, err2)
		}
		if err != nil {
			return
		}
		c, _ := netherChunk()
		for _, xz := range [][2]int{{0, 0}, {15, 15}, {7, 3}} {
			r, ok := k.CheckColumn(c, xz[0], xz[1])
			if ok && (r.Y < int(c.MinY)+1 || r.Y >= int(c.MaxY)) {
				t.Fatalf("accepted y %d outside the build height", r.Y)
			}
		}
		k.Screen(c)
		c.Blocks = nil
		k.Screen(c)
		k.Classify(world.Block("minecraft:lava"))
	})
}
