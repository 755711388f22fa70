package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/world/anvil"
	"github.com/rtpengine/rtp/world/anvil/anviltest"
)

// TestPickExhausted: on a save whose finished chunks are all air (and a
// row of unfinished ones), pick fails well within 30 s with a non-zero
// exit, naming the rejected chunks by cause, instead of running to its
// timeout.
func TestPickExhausted(t *testing.T) {
	dir := t.TempDir()
	var chunks []*anviltest.Chunk
	for x := range 9 {
		for z := range 8 {
			c := anviltest.NewChunk(x, z, anvil.Overworld)
			if x == 8 {
				c.Status, c.NoHeightmaps = "minecraft:noise", true
			}
			chunks = append(chunks, c)
		}
	}
	if err := anviltest.WriteSave(dir, anviltest.Save{Level: &anviltest.Level{SpawnX: 64, SpawnZ: 64}, Chunks: chunks}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, stderr, err := run(t, "pick", "--world", dir, "-n", "1", "--timeout", "2m")
	took := time.Since(start)
	t.Logf("pick on an all-air save: %v\n%s", took, stderr)
	if err == nil || ExitCode(err) == 0 {
		t.Fatalf("pick on an all-air save succeeded: %q", out)
	}
	if took > 30*time.Second {
		t.Errorf("pick took %v, want under 30 s", took)
	}
	msg := err.Error()
	for _, want := range []string{"exhausted", "vert 64"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if out != "" {
		t.Errorf("pick printed %q", out)
	}
}
