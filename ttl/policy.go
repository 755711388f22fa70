package ttl

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/rtpengine/rtp/memory"
)

// Built-in times to live of the dynamic causes.
const (
	// DefaultUniquePlacement is the time to live of uniquePlacement.
	DefaultUniquePlacement = Duration(30 * Day)
	// DefaultSafetyExternal is the time to live of safetyExternal, and so of
	// every verifier without an entry of its own. Other dynamic causes, if
	// any are added, also default to it.
	DefaultSafetyExternal = Duration(14 * Day)
	// DefaultUngenerated is the time to live of ungenerated (a chunk not
	// generated yet): memory.DefaultUngeneratedTTL.
	DefaultUngenerated = Duration(memory.DefaultUngeneratedTTL)
	// DefaultUnreadable is the time to live of unreadable (a chunk
	// damaged on disk): memory.DefaultUnreadableTTL.
	DefaultUnreadable = Duration(memory.DefaultUnreadableTTL)
)

// Policy is a loaded ttl.yml: the explicit entries of the file, over the
// built-in defaults.
//
// A Policy is immutable once returned by Load, LoadFile, LoadFileOrDefault
// or Default, and safe for concurrent use by any number of goroutines. The
// zero value, and a nil *Policy, are usable and mean the defaults.
type Policy struct {
	causes    [memory.NumCauses]Duration // meaningful where set is true
	set       [memory.NumCauses]bool     // which causes the file lists
	verifiers map[string]Duration        // verifiers section; nil when empty
}

// Default returns the policy of an empty ttl.yml: static causes are
// permanent, uniquePlacement lives 30 days, safetyExternal (and so every
// verifier) 14 days, and transient causes are never stored.
func Default() *Policy { return &Policy{} }

// Rule says which rule of the resolution order gave a time to live.
type Rule uint8

const (
	// RuleDefault is the built-in default of the cause.
	RuleDefault Rule = iota
	// RuleCause is the cause's entry in the causes section.
	RuleCause
	// RuleVerifier is the source's entry in the verifiers section.
	RuleVerifier
)

func (r Rule) String() string {
	switch r {
	case RuleDefault:
		return "default"
	case RuleCause:
		return "causes"
	case RuleVerifier:
		return "verifiers"
	}
	return "rule(" + strconv.Itoa(int(r)) + ")"
}

// TTL returns how long a rejection with cause c, made by the verifier
// named source ("" when no verifier was involved), is remembered: negative
// means permanent (store in the static tier), zero means do not store,
// positive means expire after that long. See Resolve.
func (p *Policy) TTL(c memory.Cause, source string) time.Duration {
	d, _ := p.Resolve(c, source)
	return d
}

// Resolve is TTL that also reports which rule gave the answer, for
// diagnostics. The resolution order is:
//
//   - safetyExternal: verifiers.<source>, causes.safetyExternal, 14 days;
//   - other dynamic causes (uniquePlacement): causes.<cause>, then the
//     built-in default (30 days for uniquePlacement);
//   - static causes: -1 (permanent); transient causes: 0;
//     invalid causes: 0, like memory treats them (RuleDefault).
//
// Only safetyExternal consults the verifiers section. Source names match
// exactly (case-sensitive).
func (p *Policy) Resolve(c memory.Cause, source string) (time.Duration, Rule) {
	if !c.Valid() {
		return 0, RuleDefault
	}
	if p != nil {
		if c == memory.CauseSafetyExternal {
			if d, ok := p.verifiers[source]; ok {
				return time.Duration(d), RuleVerifier
			}
		}
		if p.set[c] {
			return time.Duration(p.causes[c]), RuleCause
		}
	}
	return time.Duration(builtin(c)), RuleDefault
}

// builtin returns the default time to live of a valid cause.
func builtin(c memory.Cause) Duration {
	switch c.Tier() {
	case memory.Static:
		return Permanent
	case memory.Dynamic:
		switch c {
		case memory.CauseUniquePlacement:
			return DefaultUniquePlacement
		case memory.CauseUngenerated:
			return DefaultUngenerated
		case memory.CauseUnreadable:
			return DefaultUnreadable
		}
		return DefaultSafetyExternal
	}
	return 0
}

// Cause returns the entry for c in the causes section, if the file has one.
func (p *Policy) Cause(c memory.Cause) (Duration, bool) {
	if p == nil || !c.Valid() || !p.set[c] {
		return 0, false
	}
	return p.causes[c], true
}

// Verifier returns the entry for source in the verifiers section, if the
// file has one.
func (p *Policy) Verifier(source string) (Duration, bool) {
	if p == nil {
		return 0, false
	}
	d, ok := p.verifiers[source]
	return d, ok
}

// Verifiers returns the names in the verifiers section, sorted. The caller
// owns the slice. Callers may warn about names that match no registered
// verifier: such entries are kept but never used.
func (p *Policy) Verifiers() []string {
	if p == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(p.verifiers))
}

// Equal reports whether p and q hold the same entries. Policies that
// resolve alike but differ in what the file lists (an explicit
// "safetyExternal: 14d" against none) are not equal.
func (p *Policy) Equal(q *Policy) bool {
	if p == nil {
		p = Default()
	}
	if q == nil {
		q = Default()
	}
	for c := range p.set {
		if p.set[c] != q.set[c] || p.set[c] && p.causes[c] != q.causes[c] {
			return false
		}
	}
	return maps.Equal(p.verifiers, q.verifiers)
}
