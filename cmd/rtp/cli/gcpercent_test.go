package cli

import (
	"os"
	"runtime/debug"
	"testing"
)

// gcPercent reads the collector's target without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestApplyServeGCPercent(t *testing.T) {
	before := gcPercent()
	t.Cleanup(func() { debug.SetGCPercent(before) })

	t.Run("default", func(t *testing.T) {
		if v, set := os.LookupEnv("GOGC"); set {
			os.Unsetenv("GOGC")
			t.Cleanup(func() { os.Setenv("GOGC", v) })
		}
		debug.SetGCPercent(100)
		restore := applyServeGCPercent(serveGCPercent)
		if got := gcPercent(); got != serveGCPercent {
			t.Fatalf("GC percent while serving = %d, want %d", got, serveGCPercent)
		}
		restore()
		if got := gcPercent(); got != 100 {
			t.Fatalf("GC percent after restore = %d, want the previous 100", got)
		}
	})

	t.Run("GOGC set", func(t *testing.T) {
		t.Setenv("GOGC", "200")
		debug.SetGCPercent(200)
		restore := applyServeGCPercent(serveGCPercent)
		if got := gcPercent(); got != 200 {
			t.Fatalf("GC percent with GOGC=200 set = %d, want 200 left alone", got)
		}
		restore()
		if got := gcPercent(); got != 200 {
			t.Fatalf("GC percent after restore = %d, want 200", got)
		}
	})
}
