package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/ttl"
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

// Reload applies a new configuration to the running engine. What can
// change live is applied:
//
//   - the TTL policy: ttl_file is read again (also when its path changed);
//     rejections recorded from then on get the new TTLs, and probation
//     windows follow the new policy;
//   - per region: sinks.general.capacity and sinks.network.capacity
//     (SetCapacity: a smaller capacity evicts nothing at once),
//     sinks.login.player_cap, pulse, unique_placement.radius, budget
//     (SetBudget, from the next pulse);
//   - which regions the claims store verifies (the regions lists of claims
//     verifiers). A region that gains it has its pipeline cleared, since its
//     cached locations were not checked against claims.
//
// Server and auth are the HTTP server's and are ignored. Any other change
// (data folder, database, archive, worlds, regions added or removed, a
// region's world, shape, distribution, safety, queues, allocator,
// promotion timeout, memory, sinks enabled or disabled, the network lease
// or secret, the personal capacity, http verifiers) is refused: Reload then
// applies nothing and returns an *Error of ReasonRestartNeeded whose Err
// is a *RestartError listing every change. An invalid configuration or
// ttl.yml is an *Error of ReasonInvalid, and nothing is applied either.
func (e *Engine) Reload(ctx context.Context, cfg *config.Config) error {
	if cfg == nil {
		return &Error{Reason: ReasonInvalid, Err: errors.New("nil config")}
	}
	if err := cfg.Validate(); err != nil {
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
	old := e.cfg
	if changes := restartChanges(old, cfg); len(changes) > 0 {
		return &Error{Reason: ReasonRestartNeeded, Err: &RestartError{Changes: changes}}
	}
	policy, err := ttl.LoadFileOrDefault(cfg.TTLPath())
	if err != nil {
		return &Error{Reason: ReasonInvalid, Err: err}
	}
	for _, name := range e.names {
		r := e.regions[name]
		was, now := claimsVerify(old, name), claimsVerify(cfg, name)
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
		r, rc := e.regions[name], cfg.Regions[name]
		r.pipe.General().SetCapacity(rc.Sinks.General.Capacity)
		if n := r.pipe.Network(); n != nil {
			n.SetCapacity(rc.Sinks.Network.Capacity)
		}
		if l := r.pipe.Login(); l != nil {
			l.SetPlayerCap(rc.Sinks.Login.PlayerCap)
		}
		r.period.Store(int64(rc.Pulse))
		if err := r.pipe.SetBudget(rc.PipelineOptions(name).Budget); err != nil {
			// cfg validated: only a closed pipeline refuses it.
			r.log.Warn("engine: reload: budget not applied", "err", err)
		}
		r.unique.Store(rc.UniquePlacement.Radius)
	}
	e.cfg = cfg
	e.log.Info("engine: configuration reloaded")
	return nil
}

// restartChanges lists the differences between a and b that a running
// engine cannot apply (see Reload).
func restartChanges(a, b *config.Config) []string {
	var out []string
	diff := func(what string, x, y any) {
		if !reflect.DeepEqual(x, y) {
			out = append(out, what)
		}
	}
	diff("data_dir", a.DataDir, b.DataDir)
	diff("database", a.Database, b.Database)
	diff("archive", a.Archive, b.Archive)
	for _, name := range unionKeys(a.Worlds, b.Worlds) {
		x, inA := a.Worlds[name]
		y, inB := b.Worlds[name]
		switch {
		case !inA:
			out = append(out, fmt.Sprintf("world %q added", name))
		case !inB:
			out = append(out, fmt.Sprintf("world %q removed", name))
		default:
			diff(fmt.Sprintf("world %q", name), x, y)
		}
	}
	for _, name := range unionKeys(a.Regions, b.Regions) {
		x, inA := a.Regions[name]
		y, inB := b.Regions[name]
		switch {
		case !inA:
			out = append(out, fmt.Sprintf("region %q added", name))
			continue
		case !inB:
			out = append(out, fmt.Sprintf("region %q removed", name))
			continue
		}
		p := fmt.Sprintf("region %q: ", name)
		diff(p+"world", x.World, y.World)
		diff(p+"shape", x.Shape, y.Shape)
		diff(p+"distribution", x.Distribution, y.Distribution)
		diff(p+"safety", x.Safety, y.Safety)
		diff(p+"queues", x.Queues, y.Queues)
		diff(p+"allocator", x.Allocator, y.Allocator)
		diff(p+"promotion_timeout", x.PromotionTimeout, y.PromotionTimeout)
		diff(p+"memory", x.Memory, y.Memory)
		diff(p+"sinks.login.enabled", x.Sinks.Login.Enabled, y.Sinks.Login.Enabled)
		diff(p+"sinks.network.enabled", x.Sinks.Network.Enabled, y.Sinks.Network.Enabled)
		diff(p+"sinks.network.lease", x.Sinks.Network.Lease, y.Sinks.Network.Lease)
		diff(p+"sinks.network.secret_file", x.Sinks.Network.SecretFile, y.Sinks.Network.SecretFile)
		diff(p+"sinks.personal", x.Sinks.Personal, y.Sinks.Personal)
	}
	diff("http verifiers", httpOnly(a.Verifiers), httpOnly(b.Verifiers))
	diff("screen_workers", a.ScreenWorkers, b.ScreenWorkers)
	return out
}

// httpOnly returns the http verifiers of vs.
func httpOnly(vs []config.Verifier) []config.Verifier {
	var out []config.Verifier
	for _, v := range vs {
		if v.Kind == config.KindHTTP {
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
