package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rtpengine/rtp/client"
	"github.com/rtpengine/rtp/memory"
)

func newStatsCmd() *cobra.Command {
	var (
		rf        remoteFlags
		region    string
		asJSON    bool
		untilFull bool
	)
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Print the stats of a running server's regions",
		Long: `Stats asks a running rtp server for the stats of one region (--region) or of
every region, and prints a summary: the hot sinks' fill and capacity, the
cold queue, misses, teleport latency, what the spatial memory covers and
its top rejection cause. --json prints the stats in the API's documented
shape (the Stats schema of the HTTP API): one region's with --region, else
an object of every region's by name.

--until-full first waits, polling every 250 ms, until every hot sink of the
regions reported holds its quota (the fill the refill aims at): a server
warmed up after its start. It fails when --timeout passes first, saying
which sinks are short. Benchmarks use it to measure the steady state, not
the warm-up.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := rf.client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), rf.timeout)
			defer cancel()
			names := []string{region}
			if region == "" {
				regs, err := c.Regions(ctx)
				if err != nil {
					return err
				}
				names = names[:0]
				for _, r := range regs {
					names = append(names, r.Name)
				}
			}
			var all []client.Stats
			var short []string // of the last poll
			notFull := func() error {
				return fmt.Errorf("stats: sinks not full after %v: %s", rf.timeout, strings.Join(short, ", "))
			}
			for {
				all = all[:0]
				for _, n := range names {
					s, err := c.Stats(ctx, n)
					if err != nil {
						if short != nil && ctx.Err() != nil {
							return notFull()
						}
						return err
					}
					all = append(all, s)
				}
				short = shortSinks(all)
				if !untilFull || len(short) == 0 {
					break
				}
				select {
				case <-ctx.Done():
					return notFull()
				case <-time.After(250 * time.Millisecond):
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeStatsJSON(out, all, region != "")
			}
			for i, s := range all {
				if i > 0 {
					fmt.Fprintln(out)
				}
				if err := printStats(out, s); err != nil {
					return err
				}
			}
			return nil
		},
	}
	rf.register(cmd.Flags())
	cmd.Flags().StringVar(&region, "region", "", "region to report (default: every region)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the server's stats as JSON")
	cmd.Flags().BoolVar(&untilFull, "until-full", false, "first wait (up to --timeout) until every hot sink holds its quota")
	return cmd
}

// shortSinks lists the hot sinks below their quota, as "region/sink
// fill/quota".
func shortSinks(all []client.Stats) []string {
	var short []string
	for _, s := range all {
		for _, k := range s.Pipeline.Sinks {
			if k.Fill < k.Quota {
				short = append(short, fmt.Sprintf("%s/%s %d/%d", s.Region, k.Name, k.Fill, k.Quota))
			}
		}
	}
	return short
}

// writeStatsJSON writes one region's stats (api.Stats), or a JSON object
// of every region's by name.
func writeStatsJSON(w io.Writer, all []client.Stats, one bool) error {
	var v any
	if one {
		v = all[0]
	} else {
		m := make(map[string]client.Stats, len(all))
		for _, s := range all {
			m[s.Region] = s
		}
		v = m
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printStats(w io.Writer, s client.Stats) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	paused := ""
	if s.Paused {
		paused = " (scan paused)"
	}
	if x := s.Exhaustion; x.Exhausted {
		paused += " (exhausted: no safe place left; " + causeCounts(x.ByCause) + ")"
	}
	fmt.Fprintf(tw, "region %s on world %q%s\n", s.Region, s.World, paused)
	if w := s.Recovery.LostDatabase; w != "" {
		fmt.Fprintf(tw, "  WARNING:\t%s\n", w)
	}
	p := s.Pipeline
	sinks := make([]string, 0, len(p.Sinks))
	var hits, misses uint64
	for _, k := range p.Sinks {
		sinks = append(sinks, fmt.Sprintf("%s %d/%d", k.Name, k.Fill, k.Capacity))
		hits += k.Hits
	}
	misses = p.Misses
	fmt.Fprintf(tw, "  sinks:\t%s\n", strings.Join(sinks, ", "))
	fmt.Fprintf(tw, "  cold:\t%d/%d (backlog %d/%d, restored at start %d)\n",
		p.Cold.Fill, p.Cold.Capacity, p.Backlog.Fill, p.Backlog.Capacity, s.Restored)
	fmt.Fprintf(tw, "  served:\t%d hits, %d misses (%s), %d login exhaustions\n", hits, misses, share(misses, hits+misses), p.LoginExhaustion)
	if l := s.Latency; l.Count > 0 {
		fmt.Fprintf(tw, "  latency:\tp50 %s  p90 %s  p99 %s  max %s  (%d teleports)\n",
			fmtDur(l.P50()), fmtDur(l.P90()), fmtDur(l.P99()), fmtDur(l.Max()), l.Count)
	}
	fmt.Fprintf(tw, "  pipeline:\t%d screened, %d promoted; in flight: %d screenings, %d promotions\n",
		p.Screened, p.Promotions, p.Screening, p.Promoting)
	if r := topRejections(p.ScreenRejections, p.PromotionRejections, 3); r != "" {
		fmt.Fprintf(tw, "  rejections:\t%s\n", r)
	}
	if r := rejectedByCause(s.Memory.Rejections, 4); r != "" {
		// The reasons above are the API's fixed few; the causes say what
		// was wrong with the place (a chunk not generated yet is a
		// RESERVATION_FAILED there).
		fmt.Fprintf(tw, "  by cause:\t%s\n", r)
	}
	if n := s.Memory.Rejections[memory.CauseUngenerated.String()]; n > 0 {
		fmt.Fprintf(tw, "  ungenerated:\t%d draws fell on chunks the world has not generated: the region reaches past what the server generated (shrink it, or pre-generate the world)\n", n)
	}
	if r := topRejections(p.ReservationFailures, nil, 4); r != "" {
		fmt.Fprintf(tw, "  failures:\treserving a chunk: %s\n", r)
		if p.LastReservationError != "" {
			fmt.Fprintf(tw, "  unreadable:\t%s\n", p.LastReservationError)
		}
	}
	if u := s.UnknownBlocks; u.Names > 0 {
		fmt.Fprintf(tw, "  unknown:\t%d block names (never landed on), %d columns screened out\n", u.Names, u.Rejections)
	}
	if u := s.Unique; u.RadiusBlocks > 0 {
		fmt.Fprintf(tw, "  unique:\tradius %d, %d chunks hold spots, %d cached places dropped as too close\n", u.RadiusBlocks, u.SpotChunks, u.Dropped)
	}
	if w := s.Watch; w != nil {
		fmt.Fprintf(tw, "  world files:\t%d polls, %d chunks changed, %d places dropped; %d damaged chunks, %d read errors, %d torn reads retried\n",
			w.Polls, w.ChangedChunks, w.Dropped, w.Reader.DamagedChunks, w.Reader.ReadErrors, w.Reader.TornRetries)
	}
	m := s.Memory
	fmt.Fprintf(tw, "  memory:\tcoverage %.1f%%, bad %.1f%% in %d runs\n", 100*m.Coverage, 100*m.BadFraction, m.ActiveRuns)
	if m.TopCause != "" {
		fmt.Fprintf(tw, "  top cause:\t%s (%.1f%% of bad)\n", m.TopCause, 100*m.TopCauseShare)
	}
	fmt.Fprintf(tw, "  reservations:\t%d open (%d resident chunks)\n", s.Resident.Open, s.Resident.Resident)
	return tw.Flush()
}

// share formats n/total as a percentage.
func share(n, total uint64) string {
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(n)/float64(total))
}

// topRejections lists the k most frequent rejection reasons of both maps.
func topRejections(a, b map[string]uint64, k int) string {
	sum := map[string]uint64{}
	for _, m := range []map[string]uint64{a, b} {
		for r, n := range m {
			sum[r] += n
		}
	}
	keys := make([]string, 0, len(sum))
	for r := range sum {
		keys = append(keys, r)
	}
	sort.Slice(keys, func(i, j int) bool {
		if sum[keys[i]] != sum[keys[j]] {
			return sum[keys[i]] > sum[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, k)
	for _, r := range keys[:min(k, len(keys))] {
		parts = append(parts, fmt.Sprintf("%s %d", r, sum[r]))
	}
	return strings.Join(parts, ", ")
}

// fmtDur prints a duration with three significant digits.
func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Microsecond:
		return d.String()
	case d < time.Millisecond:
		return fmt.Sprintf("%.3gµs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.3gms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.3gs", d.Seconds())
	}
}

// rejectedByCause renders the k most frequent rejection causes of a
// region's memory, most first: "ungenerated 1200, safety 40".
func rejectedByCause(m map[string]int64, k int) string {
	u := make(map[string]uint64, len(m))
	for c, n := range m {
		if n > 0 {
			u[c] = uint64(n)
		}
	}
	return topRejections(u, nil, k)
}

// causeCounts renders cells by cause, most first: "vert 900, ungenerated
// 124".
func causeCounts(m map[string]int64) string {
	names := slices.Collect(maps.Keys(m))
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(m[b], m[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, m[n])
	}
	return strings.Join(parts, ", ")
}
