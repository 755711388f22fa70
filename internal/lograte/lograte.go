// Package lograte keeps a repeated warning from flooding a log: at most
// one line per interval, the lines held back in between counted in the
// next one.
package lograte

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Limiter logs warnings at most once per Interval. The zero value logs
// every warning; it is safe for concurrent use once its fields are set.
type Limiter struct {
	// Interval is the shortest time between two lines. Zero or negative:
	// no limit.
	Interval time.Duration
	// Clock gives the time. Default time.Now.
	Clock func() time.Time

	mu         sync.Mutex // protects following fields
	last       time.Time
	suppressed int
}

// Warn logs msg with args to log at warning level unless a line went out
// less than Interval ago; then it only counts it. A line that follows held
// back ones carries their number as "suppressed".
func (l *Limiter) Warn(log *slog.Logger, msg string, args ...any) {
	l.log(log, slog.LevelWarn, msg, args)
}

// Info is Warn at information level, sharing its limit: a pair of lines
// that report a state and its end (a disk low, then back) go through one
// Limiter, so a state that flips often logs once per Interval in all.
func (l *Limiter) Info(log *slog.Logger, msg string, args ...any) {
	l.log(log, slog.LevelInfo, msg, args)
}

func (l *Limiter) log(log *slog.Logger, level slog.Level, msg string, args []any) {
	now := time.Now
	if l.Clock != nil {
		now = l.Clock
	}
	l.mu.Lock()
	t := now()
	if !l.last.IsZero() && t.Sub(l.last) < l.Interval {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	l.last = t
	if l.suppressed > 0 {
		args = append(args, "suppressed", l.suppressed)
	}
	l.suppressed = 0
	l.mu.Unlock()
	log.Log(context.Background(), level, msg, args...)
}
