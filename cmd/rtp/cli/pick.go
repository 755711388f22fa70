package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/rtpengine/rtp/api"
	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/server"
)

type pickOptions struct {
	n          int
	group      int // players per group; 0: single places
	configPath string
	save       saveOptions
	region     string
	dataDir    string
	timeout    time.Duration
	asJSON     bool
}

func newPickCmd() *cobra.Command {
	var o pickOptions
	cmd := &cobra.Command{
		Use:   "pick",
		Short: "Print N safe random locations",
		Long: `Pick runs the engine on a world until it has handed out N safe locations,
prints them and exits. With --world it reads a Minecraft Java save folder
(read-only) and lays the region over it as rtp serve does: a circle round
the spawn (or round the middle of the finished chunks when they lie off to
one side of it), just wide enough to cover every finished chunk and inside
the world border, logged on stderr; --x, --z and --radius replace what they
name. Without --world it uses the configuration (--config) or the built-in
procedural world. Unless --data names one, a temporary data directory is
used and removed afterwards; with --data, the region derived is kept there
and used by later runs, as rtp serve does.

With --group N it places groups instead, as a group teleport does: each
group is N places within the region's group radius of their centre
(sinks.group), printed one place a line with an empty line after each
group (with --json, an array of the HTTP API's group-teleport answers);
-n then counts groups, 1 unless given.

A region with no safe place left (every chunk screened and rejected:
all air, unfinished or unreadable, for instance) is exhausted: pick then
fails at once, naming the rejected chunks by cause.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.group != 0 && !cmd.Flags().Changed("n") {
				o.n = 1
			}
			return runPick(cmd.Context(), &o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.IntVarP(&o.n, "n", "n", 10, "number of locations (of groups with --group: default 1)")
	f.IntVar(&o.group, "group", 0, fmt.Sprintf("place groups of this many players (1 to %d) within the region's group radius", engine.MaxGroupPlayers))
	f.StringVar(&o.configPath, "config", "", "configuration file (default: the built-in configuration)")
	o.save.register(f)
	f.StringVar(&o.region, "region", config.DefaultRegionName, "region to pick from")
	f.StringVar(&o.dataDir, "data", "", "data directory (default: a temporary one)")
	f.DurationVar(&o.timeout, "timeout", 2*time.Minute, "give up after this long")
	f.BoolVar(&o.asJSON, "json", false, "print the locations as JSON, in the HTTP API's teleport shape")
	return cmd
}

func runPick(ctx context.Context, o *pickOptions, stdout, stderr io.Writer) error {
	if o.n < 1 || o.n > 100000 {
		return usageError{fmt.Errorf("pick: -n %d outside [1, 100000]", o.n)}
	}
	if o.group < 0 || o.group > engine.MaxGroupPlayers {
		return usageError{fmt.Errorf("pick: --group %d outside [1, %d]", o.group, engine.MaxGroupPlayers)}
	}
	cfg, keys, err := loadConfig(o.configPath)
	if err != nil {
		return err
	}
	if o.save.path != "" {
		// pick draws from one region: the one named, or a default one.
		rc, ok := cfg.Regions[o.region]
		if !ok {
			rc = config.DefaultRegion()
		}
		cfg.Regions = map[string]config.Region{o.region: rc}
	}
	info := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// A temporary data directory keeps nothing: only --data keeps the
	// derived region for later picks (and for serve on the same data).
	if err := o.save.apply(ctx, cfg, keys, o.dataDir, info); err != nil {
		return err
	}
	if _, ok := cfg.Regions[o.region]; !ok {
		return usageError{fmt.Errorf("pick: no region %q in the configuration", o.region)}
	}
	if o.dataDir == "" {
		dir, err := os.MkdirTemp("", "rtp-pick-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.DataDir = dir
	} else {
		cfg.DataDir = o.dataDir
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// pick answers no requests: screening may use every processor.
	spec, err := cfg.Spec()
	if err != nil {
		return err
	}
	e, err := engine.New(ctx, spec, engine.Options{Logger: logger, ScreenWorkers: -1, Software: Version})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()
	var locs []engine.Location
	var groups [][]engine.GroupPlace
	var pickErr error
	if o.group > 0 {
		groups, pickErr = pickGroups(ctx, e, o)
	} else {
		locs, pickErr = pickN(ctx, e, o)
	}
	stop()
	<-done
	if err := e.Close(context.Background()); err != nil && pickErr == nil {
		pickErr = err
	}
	if o.group > 0 {
		err = printGroups(stdout, groups, o.asJSON)
	} else {
		err = printPicks(stdout, locs, o.asJSON)
	}
	if err != nil {
		return err
	}
	return pickErr
}

// printGroups prints the groups placed: one "world x y z" line per place,
// an empty line after each group; or with asJSON a JSON array of the HTTP
// API's group-teleport answers (api.GroupTeleport).
func printGroups(w io.Writer, groups [][]engine.GroupPlace, asJSON bool) error {
	if !asJSON {
		for _, g := range groups {
			for _, p := range g {
				if _, err := fmt.Fprintf(w, "%s %d %d %d\n", p.World, p.X, p.Y, p.Z); err != nil {
					return err
				}
			}
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		return nil
	}
	out := make([]api.GroupTeleport, 0, len(groups))
	for _, g := range groups {
		out = append(out, server.APIGroupTeleport(g))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// pickGroups places o.n groups of o.group players one after another,
// completing every place at once.
func pickGroups(ctx context.Context, e *engine.Engine, o *pickOptions) ([][]engine.GroupPlace, error) {
	players := make([]string, o.group)
	for i := range players {
		players[i] = fmt.Sprintf("rtp-pick-%d", i+1)
	}
	groups := make([][]engine.GroupPlace, 0, o.n)
	for len(groups) < o.n {
		ps, err := e.GroupTeleport(ctx, o.region, engine.GroupRequest{Players: players})
		var ee *engine.Error
		switch {
		case errors.As(err, &ee) && ee.Reason == engine.ReasonExhausted:
			return groups, fmt.Errorf("pick: %d of %d groups: region %q is exhausted: %w", len(groups), o.n, o.region, ee.Err)
		case errors.As(err, &ee) && ee.Reason == engine.ReasonNoSink:
			return groups, fmt.Errorf("pick: region %q has no group sink (sinks.group.enabled)", o.region)
		case err != nil:
			return groups, fmt.Errorf("pick: %d of %d groups: %w", len(groups), o.n, err)
		}
		for _, p := range ps {
			if err := e.Complete(p.ID); err != nil {
				return groups, err
			}
		}
		groups = append(groups, ps)
	}
	return groups, nil
}

// printPicks prints the locations: one "world x y z" line each, or with
// asJSON a JSON array of the HTTP API's teleport shape (api.Teleport, the
// wait in waitedMs).
func printPicks(w io.Writer, locs []engine.Location, asJSON bool) error {
	if !asJSON {
		for _, l := range locs {
			if _, err := fmt.Fprintf(w, "%s %d %d %d\n", l.World, l.X, l.Y, l.Z); err != nil {
				return err
			}
		}
		return nil
	}
	out := make([]api.Teleport, 0, len(locs))
	for _, l := range locs {
		out = append(out, server.APITeleport(l))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// pickN takes n locations one after another, completing each at once.
func pickN(ctx context.Context, e *engine.Engine, o *pickOptions) ([]engine.Location, error) {
	locs := make([]engine.Location, 0, o.n)
	for len(locs) < o.n {
		loc, err := e.Teleport(ctx, o.region, engine.Request{Player: "rtp-pick"})
		var ee *engine.Error
		if errors.As(err, &ee) && ee.Reason == engine.ReasonExhausted {
			// The region has no safe place left: say so at once, with
			// the rejected cells by cause, rather than wait out the
			// timeout.
			return locs, fmt.Errorf("pick: %d of %d locations: region %q is exhausted: %w", len(locs), o.n, o.region, ee.Err)
		}
		if err != nil {
			return locs, fmt.Errorf("pick: %d of %d locations: %w", len(locs), o.n, err)
		}
		if err := e.Complete(loc.ID); err != nil {
			return locs, err
		}
		locs = append(locs, loc)
	}
	return locs, nil
}
