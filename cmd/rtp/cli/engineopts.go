package cli

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/rtpengine/rtp/config"
)

// engineOptions are the flags shared by serve and pregen: where the
// configuration comes from and what overrides it.
type engineOptions struct {
	configPath string
	worldPath  string
	dimension  string
	dataDir    string
	logLevel   string
}

func (o *engineOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.configPath, "config", "", "configuration file (default: the built-in configuration)")
	f.StringVar(&o.worldPath, "world", "", "Minecraft Java save folder: replaces the configured worlds, every region draws from it")
	f.StringVar(&o.dimension, "dimension", config.Overworld, "with --world: overworld, nether or end")
	f.StringVar(&o.dataDir, "data", "", "data directory (default: the configuration's data_dir)")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
}

// load reads the configuration and applies the flags over it. Every error
// is reported with the file's name; problems of the flags are usage errors.
func (o *engineOptions) load() (*config.Config, error) {
	cfg := config.Default()
	if o.configPath != "" {
		c, err := config.LoadFile(o.configPath)
		if err != nil {
			return nil, err
		}
		cfg = c
	}
	if o.worldPath != "" {
		w := config.World{Kind: config.KindMinecraft, Path: o.worldPath, Dimension: o.dimension}
		if _, err := w.AnvilOptions(); err != nil {
			return nil, usageError{fmt.Errorf("--world: %w", err)}
		}
		const name = "world"
		cfg.Worlds = map[string]config.World{name: w}
		for rn, rc := range cfg.Regions {
			rc.World = name
			if s := rc.Safety.Vertical.Strategy; o.dimension == config.Nether && (s == "" || s == "surface") {
				// The nether has a roof: search for a floor below it.
				rc.Safety.Vertical.Strategy = "linear"
			}
			cfg.Regions[rn] = rc
		}
	}
	if o.dataDir != "" {
		cfg.DataDir = o.dataDir
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func (o *engineOptions) logger(stderr io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return nil, usageError{fmt.Errorf("--log-level: %w", err)}
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})), nil
}
