package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rtpengine/rtp/stores"
)

// errNoStores is New's error for a Spec without Stores.
var errNoStores = errors.New("engine: Spec.Stores is nil: the engine links no store of its own; " +
	"set it to sqlite.Stores{} (package github.com/rtpengine/rtp/stores/sqlite: every store a file of the data folder) " +
	"or fleet.Stores{} (package github.com/rtpengine/rtp/stores/fleet: PostgreSQL and Redis too)")

// openStores opens what the resolved spec's Stores keeps, in the order of
// package stores: the archives readied (on a full disk they make room for
// the rest), the locations database with the claims, the network leases.
// The archive stores themselves open with their worlds (openProcedural).
func (e *Engine) openStores(ctx context.Context, spec Spec) error {
	node := spec.Fleet.Node
	if node == "" {
		node = defaultNodeName()
	}
	cfg := stores.Config{
		Database: spec.Database,
		Claims:   inDir(spec.DataDir, ClaimsFile),
		Fleet:    spec.Fleet,
		Archive:  spec.Archive,
	}
	env := stores.Env{Logger: e.log, Clock: e.opts.Clock, Gate: e.gate, Software: e.opts.Software, Node: node}
	if !spec.Archive.Disabled {
		var procedural []string
		for name, ws := range spec.Worlds {
			if ws.kind() == "procedural" {
				procedural = append(procedural, name)
			}
		}
		slices.Sort(procedural)
		a, err := spec.Stores.OpenArchives(ctx, cfg, env, procedural)
		if err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		e.archives = a
	}
	db, err := spec.Stores.OpenDatabase(ctx, cfg, env)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	e.db, e.claims = db, db.Claims()
	if f := db.Fleet(); f != nil {
		e.fleet = &fleet{db: f, node: f.Node(), log: e.log, wake: map[string]chan struct{}{}}
		e.log.Info("engine: fleet node joined", "node", f.Node(), "lease", time.Until(f.LeaseUntil()).Round(time.Second))
	}
	if e.leases, e.leasesCloser, err = spec.Stores.OpenLeases(ctx, cfg, env, db); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	switch {
	case e.fleet != nil:
		e.node = e.fleet.node
	case spec.Fleet.Node != "":
		e.node = spec.Fleet.Node
	case e.leases != nil:
		e.node = node
	}
	return nil
}
