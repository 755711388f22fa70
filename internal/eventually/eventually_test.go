package eventually

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestWithin: a condition another goroutine brings about is seen, one
// that never holds is given up at the bound, one that holds at once costs
// no tick.
func TestWithin(t *testing.T) {
	var flag atomic.Bool
	time.AfterFunc(20*time.Millisecond, func() { flag.Store(true) })
	if d, ok := Within(10*time.Second, flag.Load); !ok || d < 20*time.Millisecond {
		t.Errorf("Within(a flag set after 20ms) = %v, %v; want true after at least 20ms", d, ok)
	}
	if d, ok := Within(30*time.Millisecond, func() bool { return false }); ok || d < 30*time.Millisecond {
		t.Errorf("Within(never) = %v, %v; want false after the 30ms bound", d, ok)
	}
	calls := 0
	if _, ok := Within(time.Hour, func() bool { calls++; return true }); !ok || calls != 1 {
		t.Errorf("Within(always) asked %d times, ok %v; want once, true", calls, ok)
	}
}

// fatalTB records a Fatalf instead of stopping the test.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper()                           {}
func (f *fatalTB) Fatalf(format string, args ...any) { f.msg = fmt.Sprintf(format, args...) }

// TestTrueFails: a condition that never holds fails the test and says
// what was awaited.
func TestTrueFails(t *testing.T) {
	f := &fatalTB{TB: t}
	True(f, 10*time.Millisecond, "the moon", func() bool { return false })
	if !strings.Contains(f.msg, "the moon") {
		t.Fatalf("True of a condition that never holds failed with %q, want a message naming what it waited for", f.msg)
	}
	f = &fatalTB{TB: t}
	True(f, time.Second, "the sun", func() bool { return true })
	if f.msg != "" {
		t.Fatalf("True of a condition that holds failed: %s", f.msg)
	}
}
