package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/memory/sim"
	"github.com/rtpengine/rtp/ttl"
)

func newMemoryCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Inspect and simulate the spatial memory of rejected places",
	}
	cmd.AddCommand(newMemoryInspectCmd(), newMemorySimulateCmd(), newMemoryExportCmd())
	return cmd
}

// inspectRun is one run of a memory file as inspect reports it.
type inspectRun struct {
	Start   int64  `json:"start"`
	Len     int64  `json:"len"`
	Cause   string `json:"cause"`
	Tier    string `json:"tier"`
	Expires int64  `json:"expires,omitempty"`
	State   string `json:"state"` // active, probation or expired at the inspection time
}

type inspectReport struct {
	File    string `json:"file"`
	Version int    `json:"version"`
	World   string `json:"world"`
	// Checksum is "crc32c XXXXXXXX ok" for a version 4 file (a file whose
	// checksum fails does not decode), "none" before version 4.
	Checksum string `json:"checksum"`
	// Shape, ShapeLen and Universe are the index space a version 4 file
	// was written for (empty when not recorded).
	Shape    string           `json:"shape,omitempty"`
	ShapeLen int64            `json:"shapeLen,omitempty"`
	Universe int64            `json:"universe,omitempty"`
	At       int64            `json:"at"` // Unix seconds the states refer to
	Runs     int              `json:"runs"`
	Cells    map[string]int64 `json:"cells"`   // by state
	ByCause  map[string]int64 `json:"byCause"` // active cells by cause
	Biomes   map[string]int64 `json:"biomes"`
	List     []inspectRun     `json:"list"`
}

func newMemoryInspectCmd() *cobra.Command {
	var (
		asJSON  bool
		listAll bool
		ttlPath string
		at      string
	)
	cmd := &cobra.Command{
		Use:   "inspect FILE",
		Short: "Print the statistics and runs of a memory file (versions 1 to 4)",
		Long: `Inspect decodes a spatial memory file of any version and reports its world,
for version 4 its checksum status and the shape its indices refer to,
its runs and what state each run is in at the inspection time: active (bad),
on probation (selectable again, remembered) or expired (dropped on load).
Probation windows use the TTLs of --ttl (a ttl.yml), or the defaults.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			policy := ttl.Default()
			if ttlPath != "" {
				p, err := ttl.LoadFile(ttlPath)
				if err != nil {
					return err
				}
				policy = p
			}
			when := time.Now()
			if at != "" {
				t, err := time.Parse(time.RFC3339, at)
				if err != nil {
					return usageError{fmt.Errorf("--at: %w", err)}
				}
				when = t
			}
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			f, err := memory.Decode(data)
			if err != nil {
				var ce *memory.CorruptError
				if errors.As(err, &ce) {
					ce.Path = args[0]
				}
				return err
			}
			rep := buildInspect(args[0], f, policy.TTL, when)
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			return printInspect(out, rep, listAll)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report, with every run, as JSON")
	cmd.Flags().BoolVar(&listAll, "runs", false, "list every run")
	cmd.Flags().StringVar(&ttlPath, "ttl", "", "ttl.yml giving the probation windows (default: built-in TTLs)")
	cmd.Flags().StringVar(&at, "at", "", "inspect as of this time (RFC 3339; default now)")
	return cmd
}

func buildInspect(path string, f *memory.File, ttlOf memory.TTLFunc, at time.Time) inspectReport {
	now := at.Unix()
	rep := inspectReport{File: path, Version: f.Version, World: f.World, Checksum: "none",
		Shape: f.Shape, ShapeLen: f.ShapeLen, Universe: f.Universe, At: now, Runs: len(f.Runs),
		Cells: map[string]int64{"active": 0, "probation": 0, "expired": 0}, ByCause: map[string]int64{},
		Biomes: f.Biomes, List: make([]inspectRun, 0, len(f.Runs))}
	if f.Version >= 4 {
		rep.Checksum = fmt.Sprintf("crc32c %08x ok", f.Checksum) // Decode verified it
	}
	for _, r := range f.Runs {
		state := "active"
		if r.Expires > 0 && now >= r.Expires {
			state = "expired"
			if d := ttlOf(r.Cause, ""); d > 0 && now < r.Expires+int64(d/time.Second) {
				state = "probation"
			}
		}
		rep.Cells[state] += r.Len
		if state == "active" {
			rep.ByCause[r.Cause.String()] += r.Len
		}
		rep.List = append(rep.List, inspectRun{Start: r.Start, Len: r.Len, Cause: r.Cause.String(),
			Tier: r.Tier().String(), Expires: r.Expires, State: state})
	}
	return rep
}

func printInspect(w io.Writer, rep inspectReport, listAll bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "file:\t%s\n", rep.File)
	fmt.Fprintf(tw, "version:\t%d\n", rep.Version)
	fmt.Fprintf(tw, "world:\t%q\n", rep.World)
	if rep.Version >= 4 {
		fmt.Fprintf(tw, "checksum:\t%s\n", rep.Checksum)
		shape := "not recorded"
		if rep.Shape != "" {
			shape = fmt.Sprintf("%s (%d chunks)", rep.Shape, rep.ShapeLen)
		}
		fmt.Fprintf(tw, "shape:\t%s\n", shape)
		if rep.Universe > 0 {
			fmt.Fprintf(tw, "universe:\t%d indices\n", rep.Universe)
		}
	} else {
		fmt.Fprintf(tw, "checksum:\tnone (version %d has none; shape not recorded)\n", rep.Version)
	}
	fmt.Fprintf(tw, "as of:\t%s\n", time.Unix(rep.At, 0).UTC().Format(time.RFC3339))
	fmt.Fprintf(tw, "runs:\t%d\n", rep.Runs)
	for _, s := range []string{"active", "probation", "expired"} {
		fmt.Fprintf(tw, "%s cells:\t%d\n", s, rep.Cells[s])
	}
	for _, k := range sortedNames(rep.ByCause) {
		fmt.Fprintf(tw, "  active %s:\t%d\n", k, rep.ByCause[k])
	}
	for _, k := range sortedNames(rep.Biomes) {
		fmt.Fprintf(tw, "  biome %s rejections:\t%d\n", k, rep.Biomes[k])
	}
	if listAll {
		fmt.Fprintln(tw, "\nstart\tlen\tcause\ttier\texpires\tstate")
		for _, r := range rep.List {
			exp := "-"
			if r.Expires > 0 {
				exp = time.Unix(r.Expires, 0).UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\n", r.Start, r.Len, r.Cause, r.Tier, exp, r.State)
		}
	}
	return tw.Flush()
}

func sortedNames(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func newMemorySimulateCmd() *cobra.Command {
	var (
		cfg     sim.Config
		save    string
		asJSON  bool
		ttlPath string
	)
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Simulate a region with unsafe patches and claims; compare memory with blind rerolling",
		Long: `Simulate lays out a circular region whose land is unsafe in patches (a chosen
fraction, seeded and reproducible), with claims that appear and disappear.
Every simulated hour it delivers locations twice: through the spatial memory
(draw a selectable place, check it, remember rejections) and by blind
rerolling over the whole shape. It prints, day by day, the checks (chunk
loads) each delivered location cost, and can save the learned memory file.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ttlPath != "" {
				p, err := ttl.LoadFile(ttlPath)
				if err != nil {
					return err
				}
				cfg.TTL = p.TTL
			}
			if err := cfg.Validate(); err != nil {
				return usageError{err}
			}
			out := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
			if !asJSON {
				fmt.Fprintln(tw, "day\tdeliveries\tmemory checks\tblind checks\tknown bad\ttrue unsafe\truns\tprobation\trestored\t")
			}
			res, err := sim.Run(cmd.Context(), cfg, func(d sim.Day) {
				if asJSON {
					return
				}
				fmt.Fprintf(tw, "%d\t%d\t%.3f\t%.3f\t%.1f%%\t%.1f%%\t%d\t%d\t%d\t\n", d.Day, d.Deliveries, d.MemoryChecks,
					d.BlindChecks, 100*d.KnownBad, 100*d.TrueUnsafe, d.Runs, d.ProbationRuns, d.Restored)
				tw.Flush()
			})
			if err != nil {
				return err
			}
			if save != "" {
				if err := res.Table.Save(save); err != nil {
					return err
				}
			}
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					Days         []sim.Day `json:"days"`
					SteadyMemory float64   `json:"steadyMemoryChecksPerDelivery"`
					SteadyBlind  float64   `json:"steadyBlindChecksPerDelivery"`
				}{res.Days, res.SteadyMemory, res.SteadyBlind})
			}
			fmt.Fprintf(out, "\nsteady state (last quarter): %.3f checks per delivery with memory, %.3f blind\n",
				res.SteadyMemory, res.SteadyBlind)
			if save != "" {
				fmt.Fprintf(out, "memory saved to %s\n", save)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Int64Var(&cfg.Radius, "radius", 200, "region radius in chunks")
	f.Float64Var(&cfg.Unsafe, "unsafe", 0.75, "fraction of the region unsafe at any time, claims included")
	f.Float64Var(&cfg.Claims, "claims", 0.05, "fraction of the region claimed at any time (dynamic)")
	f.DurationVar(&cfg.ClaimLife, "claim-life", 30*24*time.Hour, "mean lifetime of a claim")
	f.Float64Var(&cfg.PatchSize, "patch", 24, "size of unsafe patches in chunks")
	f.IntVar(&cfg.Days, "days", 30, "simulated days")
	f.IntVar(&cfg.PerHour, "rate", 100, "deliveries per simulated hour")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the layout and the draws")
	f.StringVar(&save, "save", "", "write the learned memory file here")
	f.StringVar(&ttlPath, "ttl", "", "ttl.yml with the TTLs to use (default: built-in TTLs)")
	f.BoolVar(&asJSON, "json", false, "print the figures as JSON")
	return cmd
}
