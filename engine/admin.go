package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/verify/claims"
)

// ScanReset forgets what the region learnt: its spatial memory is emptied
// (every run, static ones included, and the rejection counts) and its
// pipeline cleared terminally (hot entries closed, leases ended, cold and
// backlog emptied, their rows deleted). No pulse runs meanwhile; work
// already in flight finishes and may still deliver or reject afterwards,
// which is fresh knowledge. Handed-out locations are not touched.
//
// Memory has no reset of its own: the table loads an empty memory file of
// its world (memory.Table.Load), which replaces its content under its
// writer lock.
func (e *Engine) ScanReset(ctx context.Context, region string) error {
	r, err := e.regionFor(region, "")
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r.loopMu.Lock()
	defer r.loopMu.Unlock()
	if err := r.mem.Load(&memory.File{Version: memory.FileVersion, World: r.mem.World()}); err != nil {
		return &Error{Region: region, Reason: ReasonInternal, Err: fmt.Errorf("reset memory: %w", err)}
	}
	r.pipe.Clear()
	r.log.Info("engine: scan reset")
	return nil
}

// ScanPause stops the region's background work: no candidate is drawn,
// screened or promoted, and no entry moves between sinks. The region
// still keeps time (pipeline.Housekeep): network leases end when they
// should, their places back in the pool.
// Teleports are still served from what is ready; a teleport that finds
// nothing fails at once with ReasonPaused (waiting ones too).
func (e *Engine) ScanPause(region string) error {
	r, err := e.regionFor(region, "")
	if err != nil {
		return err
	}
	if !r.paused.Swap(true) {
		r.log.Info("engine: scan paused")
	}
	r.wakeAll()
	return nil
}

// ScanResume resumes the region's background work.
func (e *Engine) ScanResume(region string) error {
	r, err := e.regionFor(region, "")
	if err != nil {
		return err
	}
	if r.paused.Swap(false) {
		r.log.Info("engine: scan resumed")
	}
	return nil
}

// ExportMemory writes the region's spatial memory as its debug JSON
// (memory.Table.WriteJSON: active and probation runs with their causes,
// tiers and expiries).
func (e *Engine) ExportMemory(region string, w io.Writer) error {
	r := e.regions[region]
	if r == nil {
		return &Error{Region: region, Reason: ReasonUnknownRegion}
	}
	if err := r.mem.WriteJSON(w); err != nil {
		return fmt.Errorf("engine: region %q: export memory: %w", region, err)
	}
	return nil
}

// Ready reports whether the engine serves: nil once Run runs, shutdown has
// not started, and every region has finished its first pulse; otherwise an
// error saying why.
func (e *Engine) Ready() error {
	switch {
	case e.stopped():
		return errors.New("engine: shutting down")
	case !e.running.Load():
		return errors.New("engine: not running")
	}
	if e.fleet != nil {
		if err := e.fleet.ready(); err != nil {
			return err
		}
	}
	for _, name := range e.names {
		select {
		case <-e.regions[name].firstPulse:
		default:
			return fmt.Errorf("engine: region %q has not finished its first pulse", name)
		}
	}
	return nil
}

// RestartError is the Err of a Reload refused with ReasonRestartNeeded:
// the changes a running engine cannot apply.
type RestartError struct {
	Changes []string
}

func (e *RestartError) Error() string {
	return "restart needed for: " + strings.Join(e.Changes, "; ")
}

// Reload applies a new Spec to the running engine. What can change live
// is applied:
//
//   - the TTL policy: Spec.TTL, or Spec.TTLPath read again (also when the
//     path changed); rejections recorded from then on get the new TTLs,
//     and probation windows follow the new policy;
//   - per region, its RegionLive: GeneralCapacity and NetworkCapacity
//     (SetCapacity: a smaller capacity evicts nothing at once),
//     PlayerCap, Pulse, UniqueRadius, Budget (SetBudget, from the next
//     pulse);
//   - which regions the claims store verifies (the Regions of claims
//     verifiers). A region that gains it has its pipeline cleared, since
//     its cached locations were not checked against claims.
//
// Any other change (compared field by field, defaults filled in: the data
// folder, database, archive, worlds, regions added or removed, every field
// of a region but Live, the http verifiers, ScreenWorkers, Handouts,
// HandoutLifespan) is refused: Reload then applies nothing and returns an
// *Error of ReasonRestartNeeded whose Err is a *RestartError listing every
// change. An invalid spec or ttl.yml is an *Error of ReasonInvalid, and
// nothing is applied either. An embedder's world (WorldSpec.Source) is
// unchanged when it is the same value (==).
func (e *Engine) Reload(ctx context.Context, spec Spec) error {
	spec, err := spec.resolve()
	if err != nil {
		return &Error{Reason: ReasonInvalid, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	if e.stopped() {
		return &Error{Reason: ReasonShutdown}
	}
	old := e.spec
	if changes := restartChanges(old, spec); len(changes) > 0 {
		return &Error{Reason: ReasonRestartNeeded, Err: &RestartError{Changes: changes}}
	}
	policy, err := loadPolicy(spec)
	if err != nil {
		return &Error{Reason: ReasonInvalid, Err: err}
	}
	for _, name := range e.names {
		r := e.regions[name]
		was, now := claimsVerify(old.Verifiers, name), claimsVerify(spec.Verifiers, name)
		switch {
		case now && !was:
			if err := e.claims.Register(r.verifier); err != nil {
				return &Error{Region: name, Reason: ReasonInternal, Err: err}
			}
			r.pipe.Clear()
		case was && !now:
			r.verifier.Unregister(claims.Source)
		}
	}
	e.policy.Store(policy)
	for _, name := range e.names {
		r, live := e.regions[name], spec.Regions[name].Live
		r.pipe.General().SetCapacity(live.GeneralCapacity)
		if n := r.pipe.Network(); n != nil {
			n.SetCapacity(live.NetworkCapacity)
		}
		if l := r.pipe.Login(); l != nil {
			l.SetPlayerCap(live.PlayerCap)
		}
		r.period.Store(int64(live.Pulse))
		if err := r.pipe.SetBudget(live.Budget); err != nil {
			// spec validated: only a closed pipeline refuses it.
			r.log.Warn("engine: reload: budget not applied", "err", err)
		}
		r.unique.Store(live.uniqueRadius())
	}
	e.spec = spec
	e.log.Info("engine: configuration reloaded")
	return nil
}

// restartChanges lists the differences between the resolved specs a and b
// that a running engine cannot apply (see Reload): the fields of Spec, of
// WorldSpec and of RegionSpec but the live ones, by name.
func restartChanges(a, b Spec) []string {
	var out []string
	out = appendFieldDiffs(out, "", a, b, "TTLPath", "TTL", "Worlds", "Regions", "Verifiers")
	for _, name := range unionKeys(a.Worlds, b.Worlds) {
		x, inA := a.Worlds[name]
		y, inB := b.Worlds[name]
		switch {
		case !inA:
			out = append(out, fmt.Sprintf("world %q added", name))
		case !inB:
			out = append(out, fmt.Sprintf("world %q removed", name))
		default:
			out = appendFieldDiffs(out, fmt.Sprintf("world %q: ", name), x, y)
		}
	}
	for _, name := range unionKeys(a.Regions, b.Regions) {
		x, inA := a.Regions[name]
		y, inB := b.Regions[name]
		switch {
		case !inA:
			out = append(out, fmt.Sprintf("region %q added", name))
		case !inB:
			out = append(out, fmt.Sprintf("region %q removed", name))
		default:
			out = appendFieldDiffs(out, fmt.Sprintf("region %q: ", name), x, y, "Live")
		}
	}
	if !reflect.DeepEqual(httpOnly(a.Verifiers), httpOnly(b.Verifiers)) {
		out = append(out, "http verifiers")
	}
	return out
}

// appendFieldDiffs appends prefix+name for every field of the structs a
// and b (of one type) that differs, but those skipped.
func appendFieldDiffs(out []string, prefix string, a, b any, skip ...string) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	t := va.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if slices.Contains(skip, f.Name) {
			continue
		}
		if !sameValue(va.Field(i), vb.Field(i)) {
			out = append(out, prefix+f.Name)
		}
	}
	return out
}

// sameValue compares two field values: interfaces holding pointers (an
// embedder's world.Source, a geom.Shape) by identity, the rest deeply.
func sameValue(x, y reflect.Value) bool {
	if x.Kind() == reflect.Interface {
		if x.IsNil() || y.IsNil() {
			return x.IsNil() == y.IsNil()
		}
		x, y = x.Elem(), y.Elem()
		if x.Type() != y.Type() {
			return false
		}
		if x.Kind() == reflect.Pointer {
			return x.Pointer() == y.Pointer()
		}
	}
	return reflect.DeepEqual(x.Interface(), y.Interface())
}

// httpOnly returns the http verifiers of vs.
func httpOnly(vs []VerifierSpec) []VerifierSpec {
	var out []VerifierSpec
	for _, v := range vs {
		if v.Kind == VerifierHTTP {
			out = append(out, v)
		}
	}
	return out
}

// unionKeys returns the keys of a and b, sorted.
func unionKeys[V any](a, b map[string]V) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
