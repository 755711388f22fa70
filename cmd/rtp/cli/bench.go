package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rtpengine/rtp/loadgen"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure a running server",
	}
	cmd.AddCommand(newBenchHTTPCmd(), newBenchNullServerCmd())
	return cmd
}

type benchOptions struct {
	rf          remoteFlags
	region      string
	rate        float64
	duration    time.Duration
	concurrency int
	complete    bool
	players     int
	sink        string
	wait        time.Duration
	joins       int
	maxP99      time.Duration
	maxMisses   int64
	asJSON      bool
	get         string
}

// benchReport is what bench http prints with --json.
type benchReport struct {
	Rate      *benchRate  `json:"rate,omitempty"`
	JoinBurst *benchBurst `json:"joinBurst,omitempty"`
}

type benchRate struct {
	Target       float64           `json:"target"`
	Achieved     float64           `json:"achieved"`
	Sent         uint64            `json:"sent"`
	OK           uint64            `json:"ok"`
	Errors       uint64            `json:"errors"`
	Misses       uint64            `json:"misses"`
	ErrorCodes   map[string]uint64 `json:"errorCodes,omitempty"`
	Completed    uint64            `json:"completed"`
	P50Ms        float64           `json:"p50Ms"`
	P90Ms        float64           `json:"p90Ms"`
	P99Ms        float64           `json:"p99Ms"`
	MaxMs        float64           `json:"maxMs"`
	ServiceP50Ms float64           `json:"serviceP50Ms"`
	ServiceP99Ms float64           `json:"serviceP99Ms"`
	ServiceMaxMs float64           `json:"serviceMaxMs"`
	MaxQueueMs   float64           `json:"maxQueueMs"`
	TimerLagMs   float64           `json:"timerLagMs"`
	// StealMs is the processor time the hypervisor took from this
	// machine during the run (Linux; absent elsewhere). More than a
	// percent or so of the run's time makes the latencies the host's.
	StealMs *float64 `json:"stealMs,omitempty"`
	// KernelMs is the processor time the kernel's own threads took
	// during the run, and KernelBusiest and KernelBusiestMs name the
	// busiest of them and its share (Linux; absent elsewhere). A kernel
	// thread can hold a processor for milliseconds at a time, which the
	// steal does not show.
	KernelMs        *float64 `json:"kernelMs,omitempty"`
	KernelBusiest   string   `json:"kernelBusiest,omitempty"`
	KernelBusiestMs *float64 `json:"kernelBusiestMs,omitempty"`
	ElapsedMs       float64  `json:"elapsedMs"`
}

type benchBurst struct {
	Players    int               `json:"players"`
	Joined     uint64            `json:"joined"`
	JoinErrors uint64            `json:"joinErrors"`
	OK         uint64            `json:"ok"`
	Misses     uint64            `json:"misses"`
	Errors     uint64            `json:"errors"`
	BySink     map[string]uint64 `json:"bySink"`
	ErrorCodes map[string]uint64 `json:"errorCodes,omitempty"`
	P50Ms      float64           `json:"p50Ms"`
	P99Ms      float64           `json:"p99Ms"`
	MaxMs      float64           `json:"maxMs"`
	ElapsedMs  float64           `json:"elapsedMs"`
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func newBenchHTTPCmd() *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:   "http",
		Short: "Send teleports to a running server at a fixed rate and report latency",
		Long: `Bench http sends teleport requests to a running rtp server at a fixed rate
for a fixed time, open loop: request i is due at i/rate seconds whatever the
server does, and its latency is measured from that due time (so queueing
behind slow answers counts); the service time, from the actual send, is
reported beside it. It prints the latency percentiles, errors, misses (503
no-location) and the achieved rate.

--joins N then makes N players join at once and ask the login sink for a
location each (the login sink must be enabled, with a reserve of N), and
reports its misses. --rate 0 runs only the join burst.

The command fails (exit 1) when any request failed with an error other than
a miss, when misses exceed --max-misses (when given), or when the p99
exceeds --max-p99 (when given).`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.maxMisses = -1
			if cmd.Flags().Changed("max-misses") {
				v, _ := cmd.Flags().GetInt64("max-misses")
				o.maxMisses = v
			}
			return runBench(cmd, &o)
		},
	}
	f := cmd.Flags()
	o.rf.register(f)
	f.Lookup("timeout").Usage = "bound on each request"
	f.StringVar(&o.region, "region", "default", "region to ask")
	f.Float64Var(&o.rate, "rate", 1000, "requests per second (0: only the join burst)")
	f.DurationVar(&o.duration, "duration", 30*time.Second, "how long requests are sent")
	f.IntVar(&o.concurrency, "concurrency", loadgen.DefaultConcurrency, "most requests in flight")
	f.BoolVar(&o.complete, "complete", false, "complete each teleport once served (off the measured path)")
	f.IntVar(&o.players, "players", loadgen.DefaultPlayers, "distinct player names used in turn")
	f.StringVar(&o.sink, "sink", "", "sink to ask (default: the general sink)")
	f.DurationVar(&o.wait, "wait", 0, "how long the server waits on a miss (default: the server's; negative: no wait)")
	f.IntVar(&o.joins, "joins", 0, "after the run, make this many players join at once and take from the login sink")
	f.DurationVar(&o.maxP99, "max-p99", 0, "fail when the p99 latency exceeds this (default: no bound)")
	f.Int64("max-misses", 0, "fail when the misses exceed this (default: no bound)")
	f.BoolVar(&o.asJSON, "json", false, "print the figures as JSON")
	f.StringVar(&o.get, "get", "", "send GETs of this path (a map tile: /v1/worlds/world/tiles/0/0/0.png) instead of teleports")
	return cmd
}

func runBench(cmd *cobra.Command, o *benchOptions) error {
	switch {
	case o.rate < 0:
		return usageError{fmt.Errorf("bench http: --rate %v is negative", o.rate)}
	case o.rate == 0 && o.joins == 0:
		return usageError{errors.New("bench http: --rate 0 without --joins: nothing to do")}
	case o.rate > 0 && o.duration <= 0:
		return usageError{fmt.Errorf("bench http: --duration %v must be positive", o.duration)}
	case o.joins < 0 || o.joins > 100_000:
		return usageError{fmt.Errorf("bench http: --joins %d outside [0, 100000]", o.joins)}
	case o.concurrency < 1:
		return usageError{fmt.Errorf("bench http: --concurrency %d must be at least 1", o.concurrency)}
	case o.players < 1:
		return usageError{fmt.Errorf("bench http: --players %d must be at least 1", o.players)}
	case o.get != "" && (!strings.HasPrefix(o.get, "/") || o.joins > 0 || o.complete):
		return usageError{fmt.Errorf("bench http: --get %q: want a path from / (and neither --joins nor --complete)", o.get)}
	}
	c, err := o.rf.client() // checks the address
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	out, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	var rep benchReport
	var failures []string
	if o.rate > 0 {
		if !o.asJSON {
			if o.get != "" {
				fmt.Fprintf(stderr, "sending %.0f GET %s/s to %s for %s...\n", o.rate, o.get, c.BaseURL(), o.duration)
			} else {
				fmt.Fprintf(stderr, "sending %.0f teleports/s to %s region %q for %s...\n", o.rate, c.BaseURL(), o.region, o.duration)
			}
		}
		steal, kernel := stealMeter(), kernelMeter()
		res, err := loadgen.Run(ctx, loadgen.Config{BaseURL: c.BaseURL(), Token: o.rf.tokenValue(), Region: o.region,
			Rate: o.rate, Duration: o.duration, Concurrency: o.concurrency, Complete: o.complete, Players: o.players,
			Sink: o.sink, Wait: o.wait, Timeout: o.rf.timeout, WarmConns: min(o.concurrency, 8), Get: o.get})
		if err != nil && res.Latency == nil {
			return err
		}
		rep.Rate = &benchRate{Target: o.rate, Achieved: res.Achieved, Sent: res.Sent, OK: res.OK, Errors: res.Errors,
			Misses: res.Misses, ErrorCodes: res.ErrorCodes, Completed: res.Completed,
			P50Ms: msOf(res.P50), P90Ms: msOf(res.P90), P99Ms: msOf(res.P99), MaxMs: msOf(res.Max),
			ServiceP50Ms: msOf(res.ServiceP50), ServiceP99Ms: msOf(res.ServiceP99), ServiceMaxMs: msOf(res.ServiceMax),
			MaxQueueMs: msOf(res.MaxQueue), TimerLagMs: msOf(res.TimerLag), ElapsedMs: msOf(res.Elapsed)}
		if d, ok := steal(); ok {
			rep.Rate.StealMs = new(msOf(d))
		}
		if u, ok := kernel(); ok {
			rep.Rate.KernelMs = new(msOf(u.total))
			if u.busiest != "" {
				rep.Rate.KernelBusiest, rep.Rate.KernelBusiestMs = u.busiest, new(msOf(u.busiestTime))
			}
		}
		if err != nil {
			failures = append(failures, "interrupted: "+err.Error())
		}
		if res.Errors > 0 {
			failures = append(failures, fmt.Sprintf("%d errors", res.Errors))
		}
		if o.maxMisses >= 0 && res.Misses > uint64(o.maxMisses) {
			failures = append(failures, fmt.Sprintf("%d misses, more than %d", res.Misses, o.maxMisses))
		}
		if o.maxP99 > 0 && res.P99 > o.maxP99 {
			failures = append(failures, fmt.Sprintf("p99 %s above %s", fmtDur(res.P99), fmtDur(o.maxP99)))
		}
	}
	if o.joins > 0 && ctx.Err() == nil {
		res, err := loadgen.Burst(ctx, loadgen.BurstConfig{BaseURL: c.BaseURL(), Token: o.rf.tokenValue(), Region: o.region,
			Players: o.joins, Wait: o.wait, Complete: true, Quit: true, Timeout: o.rf.timeout})
		if err != nil && res.Players == 0 {
			return err
		}
		rep.JoinBurst = &benchBurst{Players: res.Players, Joined: res.Joined, JoinErrors: res.JoinErrors, OK: res.OK,
			Misses: res.Misses, Errors: res.Errors, BySink: res.BySink, ErrorCodes: res.ErrorCodes,
			P50Ms: msOf(res.P50), P99Ms: msOf(res.P99), MaxMs: msOf(res.Max), ElapsedMs: msOf(res.Elapsed)}
		if err != nil {
			failures = append(failures, "join burst interrupted: "+err.Error())
		}
		if n := res.Errors + res.JoinErrors; n > 0 {
			failures = append(failures, fmt.Sprintf("join burst: %d errors", n))
		}
		if o.maxMisses >= 0 && res.Misses > uint64(o.maxMisses) {
			failures = append(failures, fmt.Sprintf("join burst: %d misses, more than %d", res.Misses, o.maxMisses))
		}
	}
	if o.asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else if err := printBench(out, rep); err != nil {
		return err
	}
	if len(failures) > 0 {
		return fmt.Errorf("bench http: %s", strings.Join(failures, "; "))
	}
	return nil
}

// stealWarn is the share of a run's time above which the host's steal
// gets a warning: a percent of a 10 s run is 100 ms, enough to move a
// p99 over 10,000 requests.
const stealWarn = 0.01

func printBench(w io.Writer, rep benchReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	d := func(ms float64) string { return fmtDur(time.Duration(ms * float64(time.Millisecond))) }
	if r := rep.Rate; r != nil {
		fmt.Fprintf(tw, "requests:\t%d sent, %d ok, %d errors, %d misses\n", r.Sent, r.OK, r.Errors, r.Misses)
		if len(r.ErrorCodes) > 0 {
			fmt.Fprintf(tw, "errors by code:\t%s\n", codes(r.ErrorCodes))
		}
		fmt.Fprintf(tw, "rate:\t%.1f/s achieved of %.1f/s over %s\n", r.Achieved, r.Target, d(r.ElapsedMs))
		fmt.Fprintf(tw, "latency:\tp50 %s  p90 %s  p99 %s  max %s\n", d(r.P50Ms), d(r.P90Ms), d(r.P99Ms), d(r.MaxMs))
		fmt.Fprintf(tw, "service time:\tp50 %s  p99 %s  max %s\n", d(r.ServiceP50Ms), d(r.ServiceP99Ms), d(r.ServiceMaxMs))
		fmt.Fprintf(tw, "generator:\tworst wait for a free worker %s (counted), worst timer lateness %s (not counted)\n",
			d(r.MaxQueueMs), d(r.TimerLagMs))
		if r.StealMs != nil {
			fmt.Fprintf(tw, "host steal:\t%s of processor time taken by the hypervisor during the run\n", d(*r.StealMs))
			if *r.StealMs > stealWarn*r.ElapsedMs {
				fmt.Fprintf(tw, "warning:\tthe host took more than %.0f%% of the run's time: the latencies measure it as much as the server\n", stealWarn*100)
			}
		}
		if r.KernelMs != nil {
			busiest := ""
			if r.KernelBusiestMs != nil {
				busiest = fmt.Sprintf(" (busiest: %s, %s)", r.KernelBusiest, d(*r.KernelBusiestMs))
			}
			fmt.Fprintf(tw, "kernel threads:\t%s of processor time during the run%s\n", d(*r.KernelMs), busiest)
		}
		if r.Completed > 0 {
			fmt.Fprintf(tw, "completed:\t%d\n", r.Completed)
		}
	}
	if b := rep.JoinBurst; b != nil {
		fmt.Fprintf(tw, "join burst:\t%d players, %d joined (%d errors); %d ok, %d misses, %d errors\n",
			b.Players, b.Joined, b.JoinErrors, b.OK, b.Misses, b.Errors)
		if len(b.BySink) > 0 {
			fmt.Fprintf(tw, "burst served by sink:\t%s\n", codes(b.BySink))
		}
		if len(b.ErrorCodes) > 0 {
			fmt.Fprintf(tw, "burst errors by code:\t%s\n", codes(b.ErrorCodes))
		}
		fmt.Fprintf(tw, "burst latency:\tp50 %s  p99 %s  max %s  (all served in %s)\n", d(b.P50Ms), d(b.P99Ms), d(b.MaxMs), d(b.ElapsedMs))
	}
	return tw.Flush()
}

func codes(m map[string]uint64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
