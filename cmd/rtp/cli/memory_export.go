package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/ttl"
)

func newMemoryExportCmd() *cobra.Command {
	var (
		rf         remoteFlags
		region     string
		configPath string
		ttlPath    string
		outPath    string
	)
	cmd := &cobra.Command{
		Use:   "export [FILE]",
		Short: "Write the debug JSON of a memory file, or of a running server's region",
		Long: `Export writes the debug JSON view of a spatial memory (its active and
probation runs, with their causes, tiers and expiry times): the same view
GET /v1/admin/regions/{region}/memory gives.

With FILE it reads a memory file offline. Its runs are placed in the index
universe of --region's shape in --config (or the built-in configuration)
when that region exists and the file fits it, otherwise in the smallest
universe that holds them. Probation windows come from --ttl (a ttl.yml) or
the built-in TTLs.

Without FILE it asks a running server (--addr, --token) for --region's
memory.`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			if outPath != "" {
				f, err := os.Create(outPath)
				if err != nil {
					return err
				}
				bw := bufio.NewWriter(f)
				err = runMemoryExport(cmd.Context(), args, &rf, region, configPath, ttlPath, bw)
				if ferr := bw.Flush(); err == nil {
					err = ferr
				}
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				return err
			}
			return runMemoryExport(cmd.Context(), args, &rf, region, configPath, ttlPath, w)
		},
	}
	f := cmd.Flags()
	rf.register(f)
	f.StringVar(&region, "region", "", "region (required without FILE; with FILE, the region whose shape sizes the universe)")
	f.StringVar(&configPath, "config", "", "with FILE: configuration naming the region (default: the built-in configuration)")
	f.StringVar(&ttlPath, "ttl", "", "with FILE: ttl.yml giving the probation windows (default: built-in TTLs)")
	f.StringVarP(&outPath, "output", "o", "", "write to this file instead of stdout")
	return cmd
}

func runMemoryExport(ctx context.Context, args []string, rf *remoteFlags, region, configPath, ttlPath string, w io.Writer) error {
	if len(args) == 0 {
		if region == "" {
			return usageError{errors.New("memory export: give a FILE, or --region to ask a server")}
		}
		c, err := rf.client()
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, rf.timeout)
		defer cancel()
		return c.ExportMemory(ctx, region, w)
	}
	path := args[0]
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	file, err := memory.Decode(data)
	if err != nil {
		var ce *memory.CorruptError
		if errors.As(err, &ce) {
			ce.Path = path
		}
		return err
	}
	policy := ttl.Default()
	if ttlPath != "" {
		if policy, err = ttl.LoadFile(ttlPath); err != nil {
			return err
		}
	}
	n, err := universe(file, region, configPath)
	if err != nil {
		return err
	}
	t, err := memory.New(memory.Options{Len: n, World: file.World, TTL: policy.TTL})
	if err != nil {
		return err
	}
	if err := t.Load(file); err != nil {
		return fmt.Errorf("memory export: %s: %w", path, err)
	}
	return t.WriteJSON(w)
}

// universe returns the index universe a memory file is exported in: the
// region's shape when one is named (or the default region exists) and the
// file's runs fit it, else the end of the last run.
func universe(f *memory.File, region, configPath string) (int64, error) {
	var end int64 = 1
	for _, r := range f.Runs {
		end = max(end, r.Start+r.Len)
	}
	cfg := config.Default()
	if configPath != "" {
		c, err := config.LoadFile(configPath)
		if err != nil {
			return 0, err
		}
		cfg = c
	}
	name := region
	if name == "" {
		name = config.DefaultRegionName
	}
	rc, ok := cfg.Regions[name]
	if !ok {
		if region != "" {
			return 0, usageError{fmt.Errorf("memory export: no region %q in the configuration", region)}
		}
		return end, nil
	}
	shape, err := rc.BuildShape()
	if err != nil {
		return 0, err
	}
	if shape.Len() < end {
		if region != "" || configPath != "" {
			return 0, fmt.Errorf("memory export: the file's runs reach index %d, past the %d chunks of region %q", end, shape.Len(), name)
		}
		return end, nil
	}
	return shape.Len(), nil
}
