package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/world/anvil"
)

type pickOptions struct {
	n          int
	configPath string
	worldPath  string
	dimension  string
	region     string
	dataDir    string
	x, z       int64
	centerSet  bool
	radius     int64
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
(read-only) and centres a circular region on the world spawn (or --x/--z);
without, it uses the configuration (--config) or the built-in procedural
world. Unless --data names one, a temporary data directory is used and
removed afterwards.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.centerSet = cmd.Flags().Changed("x") || cmd.Flags().Changed("z")
			return runPick(cmd.Context(), &o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.IntVarP(&o.n, "n", "n", 10, "number of locations")
	f.StringVar(&o.configPath, "config", "", "configuration file (default: the built-in configuration)")
	f.StringVar(&o.worldPath, "world", "", "Minecraft Java save folder (or a folder of region files) to read")
	f.StringVar(&o.dimension, "dimension", "overworld", "with --world: overworld, nether or end")
	f.StringVar(&o.region, "region", config.DefaultRegionName, "region to pick from")
	f.StringVar(&o.dataDir, "data", "", "data directory (default: a temporary one)")
	f.Int64Var(&o.x, "x", 0, "with --world: block x of the region's centre (default: the spawn)")
	f.Int64Var(&o.z, "z", 0, "with --world: block z of the region's centre (default: the spawn)")
	f.Int64Var(&o.radius, "radius", 1024, "with --world: region radius in blocks")
	f.DurationVar(&o.timeout, "timeout", 2*time.Minute, "give up after this long")
	f.BoolVar(&o.asJSON, "json", false, "print the locations as JSON")
	return cmd
}

func runPick(ctx context.Context, o *pickOptions, stdout, stderr io.Writer) error {
	if o.n < 1 || o.n > 100000 {
		return usageError{fmt.Errorf("pick: -n %d outside [1, 100000]", o.n)}
	}
	cfg := config.Default()
	if o.configPath != "" {
		c, err := config.LoadFile(o.configPath)
		if err != nil {
			return err
		}
		cfg = c
	}
	if o.worldPath != "" {
		if err := pickWorld(cfg, o); err != nil {
			return err
		}
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
	e, err := engine.New(ctx, cfg, engine.Options{Logger: logger, ScreenWorkers: -1})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()
	locs, pickErr := pickN(ctx, e, o)
	stop()
	<-done
	if err := e.Close(context.Background()); err != nil && pickErr == nil {
		pickErr = err
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(locs); err != nil {
			return err
		}
	} else {
		for _, l := range locs {
			fmt.Fprintf(stdout, "%s %d %d %d\n", l.World, l.X, l.Y, l.Z)
		}
	}
	return pickErr
}

// pickN takes n locations one after another, completing each at once.
func pickN(ctx context.Context, e *engine.Engine, o *pickOptions) ([]engine.Location, error) {
	locs := make([]engine.Location, 0, o.n)
	for len(locs) < o.n {
		loc, err := e.Teleport(ctx, o.region, engine.Request{Player: "rtp-pick"})
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

// pickWorld points the configuration's region at a Minecraft save folder,
// centred on its spawn unless --x/--z say otherwise.
func pickWorld(cfg *config.Config, o *pickOptions) error {
	w := config.World{Kind: config.KindMinecraft, Path: o.worldPath, Dimension: o.dimension}
	opts, err := w.AnvilOptions()
	if err != nil {
		return usageError{err}
	}
	if !o.centerSet {
		reader, err := anvil.Open(o.worldPath, opts)
		if err != nil {
			return err
		}
		spawn := reader.Level().Spawn
		reader.Close()
		o.x, o.z = spawn.X, spawn.Z
	}
	rc, ok := cfg.Regions[o.region]
	if !ok {
		rc = config.DefaultRegion()
	}
	rc.World = "minecraft"
	rc.Shape = config.Shape{Kind: "circle", CenterX: o.x, CenterZ: o.z, Radius: o.radius}
	if o.dimension == config.Nether {
		rc.Safety = config.DefaultRegion().Safety
		rc.Safety.Vertical.Strategy = "linear"
	}
	cfg.Worlds = map[string]config.World{"minecraft": w}
	cfg.Regions = map[string]config.Region{o.region: rc}
	return nil
}
