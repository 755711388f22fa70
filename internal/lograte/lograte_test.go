package lograte

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
	now := time.Unix(1000, 0)
	l := &Limiter{Interval: time.Minute, Clock: func() time.Time { return now }}
	for i := range 91 {
		now = now.Add(176 * time.Millisecond) // 91 warnings in 16 s
		l.Warn(log, "store: write failed", "i", i)
	}
	now = now.Add(time.Minute)
	l.Warn(log, "store: write failed", "i", 91)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`level=WARN msg="store: write failed" i=0`,
		`level=WARN msg="store: write failed" i=91 suppressed=90`,
	}
	if len(lines) != len(want) {
		t.Fatalf("logged %d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d = %s, want %s", i, lines[i], want[i])
		}
	}
	var all bytes.Buffer
	var zero Limiter
	for range 3 {
		zero.Warn(slog.New(slog.NewTextHandler(&all, nil)), "x")
	}
	if n := strings.Count(all.String(), "\n"); n != 3 {
		t.Errorf("zero Limiter logged %d of 3 lines", n)
	}
}
