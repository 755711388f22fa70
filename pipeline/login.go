package pipeline

import "sync/atomic"

// LoginSink is the login reserve (ADR-023): a single-target sink sized to
// the free player slots, playerCap - online, so every player who can still
// join finds a location ready. It is filled in a burst at start (up to
// Budget.LoginBurst promotions on the first pulses, beyond the per-pulse
// cap) and by one promotion per quit afterwards. A join shrinks it: the
// entry the joining player takes leaves with them, and a surplus left by
// joins that did not take one is trimmed only after Options.MinResidence.
//
// A LoginSink is safe for concurrent use. Its zero value is not usable: a
// Pipeline makes it (see Options).
type LoginSink struct {
	*Sink
	playerCap  atomic.Int64
	online     atomic.Int64
	burst      atomic.Bool
	exhaustion atomic.Uint64
}

func newLoginSink(s *Sink, playerCap int) *LoginSink {
	l := &LoginSink{Sink: s}
	l.playerCap.Store(int64(playerCap))
	l.burst.Store(true)
	l.resize()
	return l
}

// resize sets the capacity to playerCap - online.
func (l *LoginSink) resize() {
	l.SetCapacity(int(max(l.playerCap.Load()-l.online.Load(), 0)))
}

// OnJoin records a player joining.
func (l *LoginSink) OnJoin() {
	l.online.Add(1)
	l.resize()
}

// OnQuit records a player leaving; the slot it frees is refilled on a
// later pulse.
func (l *LoginSink) OnQuit() {
	if l.online.Add(-1) < 0 {
		l.online.Store(0)
	}
	l.resize()
}

// SetOnline sets the number of players online (at start, or to correct
// drift).
func (l *LoginSink) SetOnline(n int) {
	l.online.Store(int64(max(n, 0)))
	l.resize()
}

// SetPlayerCap changes the player cap. A larger cap starts a new burst.
func (l *LoginSink) SetPlayerCap(n int) {
	if int64(n) > l.playerCap.Swap(int64(max(n, 0))) {
		l.burst.Store(true)
	}
	l.resize()
}

// Online returns the number of players online, as recorded.
func (l *LoginSink) Online() int { return int(l.online.Load()) }

// PlayerCap returns the player cap.
func (l *LoginSink) PlayerCap() int { return int(l.playerCap.Load()) }

// Take hands out a location for a joining player, like Sink.Take. An empty
// reserve counts as a login-reserve exhaustion (the caller falls through
// to another sink).
func (l *LoginSink) Take() (*Hot, bool) {
	h, ok := l.Sink.Take()
	if !ok {
		l.exhaustion.Add(1)
	}
	return h, ok
}

// Exhaustion is the number of Take calls that found the reserve empty.
func (l *LoginSink) Exhaustion() uint64 { return l.exhaustion.Load() }
