package cli

import (
	"context"
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
	save       saveOptions
	dataDir    string
	logLevel   string
}

func (o *engineOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.configPath, "config", "", "configuration file (default: the built-in configuration)")
	o.save.register(f)
	f.StringVar(&o.dataDir, "data", "", "data directory (default: the configuration's data_dir)")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
}

// load reads the configuration and applies the flags over it (see
// saveOptions for --world). Every error is reported with the file's name;
// problems of the flags are usage errors. log receives what --world
// derived from the save; the data directory keeps it (DerivedRegionsFile).
func (o *engineOptions) load(ctx context.Context, log *slog.Logger) (*config.Config, error) {
	cfg, keys, err := loadConfig(o.configPath)
	if err != nil {
		return nil, err
	}
	if o.dataDir != "" {
		cfg.DataDir = o.dataDir
	}
	if err := o.save.apply(ctx, cfg, keys, cfg.DataDir, log); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// loadConfig reads the file at path, or returns the built-in
// configuration when path is "", with the keys the file sets.
func loadConfig(path string) (*config.Config, config.Keys, error) {
	if path == "" {
		return config.Default(), config.Keys{}, nil
	}
	return config.LoadFileKeys(path)
}

func (o *engineOptions) logger(stderr io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return nil, usageError{fmt.Errorf("--log-level: %w", err)}
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})), nil
}
