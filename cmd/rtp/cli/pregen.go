package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/pipeline"
)

type pregenOptions struct {
	engineOptions
	region   string
	target   int
	timeout  time.Duration
	stall    time.Duration
	interval time.Duration
}

func newPregenCmd() *cobra.Command {
	var o pregenOptions
	cmd := &cobra.Command{
		Use:   "pregen",
		Short: "Fill the caches ahead of serving, with a progress bar",
		Long: `Pregen runs the configured regions without serving HTTP until every
region's general sink is full and its cold queue holds --target screened
locations (default: the cold queue's capacity), showing the progress on
stderr. Then it shuts down cleanly: the locations are kept in the data
directory's rtp.db, so the next rtp serve (or pregen) starts warm.

It gives up (exit 1, keeping what it filled) after --timeout, or once the
caches have not grown for --stall: a region holds one place per chunk, so a
target near the number of safe chunks of a small region is never reached.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPregen(cmd.Context(), &o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.register(cmd)
	f := cmd.Flags()
	f.StringVar(&o.region, "region", "", "fill only this region (default: every region)")
	f.IntVar(&o.target, "target", 0, "cold locations to hold per region (default: the cold queue's capacity)")
	f.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up after this long")
	f.DurationVar(&o.stall, "stall", time.Minute, "give up when the caches have not grown for this long (0: never)")
	f.DurationVar(&o.interval, "interval", 200*time.Millisecond, "how often the progress is checked")
	// pregen logs only warnings by default: the progress bar is the output.
	f.Lookup("log-level").DefValue = "warn"
	o.logLevel = "warn"
	return cmd
}

// pregenWiden is how many times a region's screening budget pregen works
// with; pregenMaxScreens bounds the screenings it keeps in flight,
// pregenMaxCandidates the candidates a pulse draws.
const (
	pregenWiden         = 32
	pregenMaxScreens    = 1024
	pregenMaxCandidates = 32 << 10
)

// pregenBudget returns b, zero fields resolved to the pipeline's defaults,
// with its candidates and screenings per pulse and its screenings in
// flight pregenWiden times larger, within the bounds above (a budget
// already past them is kept).
// The budget paces the refill of a process that also answers requests,
// and screenings start only on pulses: a slot that frees between two
// pulses stays empty until the next. pregen answers none. With the load
// test's budget as written it kept two processors a tenth busy and filled
// 26,000 places in 100 s; widened, it keeps both busy and fills them in
// 10 s. Promotions keep their budget: the hot sinks fill early either way.
func pregenBudget(b pipeline.Budget) pipeline.Budget {
	widen := func(v, def, limit int) int {
		if v <= 0 {
			v = def
		}
		return max(v, min(v*pregenWiden, limit))
	}
	b.Candidates = widen(b.Candidates, pipeline.DefaultCandidates, pregenMaxCandidates)
	b.Screens = widen(b.Screens, pipeline.DefaultScreens, pregenMaxScreens*4)
	b.MaxScreens = widen(b.MaxScreens, pipeline.DefaultMaxScreens, pregenMaxScreens)
	return b
}

// pregenGoal is what one region must reach.
type pregenGoal struct {
	region      string
	general     int // general sink capacity
	cold        int // cold target
	haveGeneral int
	haveCold    int
}

func (g pregenGoal) done() bool { return g.haveGeneral >= g.general && g.haveCold >= g.cold }

func runPregen(ctx context.Context, o *pregenOptions, stdout, stderr io.Writer) (err error) {
	if o.target < 0 {
		return usageError{fmt.Errorf("pregen: --target %d is negative", o.target)}
	}
	if o.stall < 0 {
		return usageError{fmt.Errorf("pregen: --stall %v is negative", o.stall)}
	}
	if o.interval <= 0 {
		return usageError{fmt.Errorf("pregen: --interval %v must be positive", o.interval)}
	}
	// The log and the progress bar share standard error: one lock keeps
	// their lines whole.
	stderr = &serializedWriter{w: stderr}
	logger, err := o.logger(stderr)
	if err != nil {
		return err
	}
	cfg, err := o.load(ctx, logger)
	if err != nil {
		return err
	}
	if o.region != "" {
		if _, ok := cfg.Regions[o.region]; !ok {
			return usageError{fmt.Errorf("pregen: no region %q in the configuration", o.region)}
		}
	}
	// pregen answers no requests: screening may use every processor.
	spec, err := cfg.Spec()
	if err != nil {
		return err
	}
	for n, r := range spec.Regions {
		r.Live.Budget = pregenBudget(r.Live.Budget)
		spec.Regions[n] = r
	}
	// ArchiveAll: warming the terrain archive is half of pregen's work.
	// Screening on every processor generates tiles faster than the
	// archive's writer stores them, and a tile dropped from its queue
	// would be generated again by the server that was meant to read it.
	e, err := engine.New(ctx, spec, engine.Options{Logger: logger, ScreenWorkers: -1, ArchiveAll: true, Software: Version})
	if err != nil {
		return err
	}
	// The timeout bounds the filling, not the opening of the databases.
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()
	var (
		shutOnce sync.Once
		shutErr  error
	)
	// shutdown stops the engine once; its shutdown writes what is left
	// of the archives' queues.
	shutdown := func() error {
		shutOnce.Do(func() {
			stop()
			if rerr := <-done; rerr != nil {
				shutErr = fmt.Errorf("pregen: shutdown: %w", rerr)
			}
		})
		return shutErr
	}
	defer func() {
		if serr := shutdown(); serr != nil && err == nil {
			err = serr
		}
	}()

	names := e.Regions()
	if o.region != "" {
		names = []string{o.region}
	}
	goals := make([]pregenGoal, len(names))
	restored := make([]int, len(names))
	for i, n := range names {
		st, err := e.Stats(n)
		if err != nil {
			return err
		}
		g := pregenGoal{region: n, cold: o.target}
		if g.cold == 0 || g.cold > st.Pipeline.Cold.Capacity {
			if o.target > st.Pipeline.Cold.Capacity {
				return usageError{fmt.Errorf("pregen: --target %d is above region %s's cold capacity %d", o.target, n, st.Pipeline.Cold.Capacity)}
			}
			g.cold = st.Pipeline.Cold.Capacity
		}
		if s := generalSink(st.Pipeline.Sinks); s != nil {
			g.general = s.Capacity
		}
		goals[i] = g
		restored[i] = st.Restored
	}
	bar := newProgress(stderr)
	tick := time.NewTicker(o.interval)
	defer tick.Stop()
	start := time.Now()
	best, grew := -1, start
	for {
		all := true
		var have, want int
		for i := range goals {
			g := &goals[i]
			st, err := e.Stats(g.region)
			if err != nil {
				return err
			}
			g.haveCold = st.Pipeline.Cold.Fill
			if s := generalSink(st.Pipeline.Sinks); s != nil {
				g.haveGeneral = s.Fill
			}
			have += min(g.haveGeneral, g.general) + min(g.haveCold, g.cold)
			want += g.general + g.cold
			all = all && g.done()
		}
		bar.update(have, want, describeGoals(goals), time.Since(start))
		if all {
			break
		}
		if now := time.Now(); have > best {
			best, grew = have, now
		} else if o.stall > 0 && now.Sub(grew) >= o.stall {
			// A region whose distinct safe places are all held (a small
			// region, or a target near its size) stops growing for good.
			bar.finish()
			return fmt.Errorf("pregen: no progress for %s, stopped after %s: %s (the regions may hold no more places: lower --target or widen them)",
				o.stall, time.Since(start).Round(time.Second), describeGoals(goals))
		}
		select {
		case <-ctx.Done():
			bar.finish()
			return fmt.Errorf("pregen: %w after %s: %s", ctx.Err(), time.Since(start).Round(time.Second), describeGoals(goals))
		case <-tick.C:
		}
	}
	bar.finish()
	for i, g := range goals {
		fmt.Fprintf(stdout, "region %s: general %d/%d, cold %d (target %d; %d restored at start)\n",
			g.region, g.haveGeneral, g.general, g.haveCold, g.cold, restored[i])
	}
	fmt.Fprintf(stdout, "filled in %s; locations saved in %s\n", time.Since(start).Round(time.Millisecond), cfg.DatabasePath())
	if err := shutdown(); err != nil {
		return err
	}
	reportArchives(stdout, e)
	return nil
}

// reportArchives prints, for each procedural world of e (shut down), the
// terrain tiles its archive generated, read back, and failed to store.
func reportArchives(w io.Writer, e *engine.Engine) {
	archives := e.Archives()
	for _, name := range e.Worlds() {
		// The counters outlive the store, closed by the shutdown; an
		// archive that never had one counts nothing.
		st, ok := archives[name]
		if !ok || st.Generations+st.Hits == 0 {
			continue
		}
		fmt.Fprintf(w, "world %s: terrain archive: %d tiles generated, %d read from the archive", name, st.Generations, st.Hits)
		if lost := st.DroppedWrites + st.WriteErrors; lost > 0 {
			fmt.Fprintf(w, "; %d not stored (see the log)", lost)
		}
		fmt.Fprintln(w)
	}
}

func generalSink(sinks []pipeline.SinkStats) *pipeline.SinkStats {
	for i := range sinks {
		if sinks[i].Kind == pipeline.KindGeneral.String() || sinks[i].Name == "general" {
			return &sinks[i]
		}
	}
	return nil
}

func describeGoals(goals []pregenGoal) string {
	parts := make([]string, len(goals))
	for i, g := range goals {
		parts[i] = fmt.Sprintf("%s general %d/%d cold %d/%d", g.region, g.haveGeneral, g.general, g.haveCold, g.cold)
	}
	return strings.Join(parts, "; ")
}

// progress draws a progress bar on a terminal (redrawn in place) or, on
// anything else, prints a line at each tenth of the way.
type progress struct {
	w        io.Writer
	terminal bool
	lastStep int
	drawn    bool
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, lastStep: -1}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

const barWidth = 30

func (p *progress) update(have, want int, detail string, elapsed time.Duration) {
	frac := 1.0
	if want > 0 {
		frac = float64(have) / float64(want)
	}
	if p.terminal {
		n := int(frac * barWidth)
		fmt.Fprintf(p.w, "\r\x1b[K[%s%s] %3.0f%% %s (%s)", strings.Repeat("#", n), strings.Repeat(".", barWidth-n),
			100*frac, detail, elapsed.Round(time.Second))
		p.drawn = true
		return
	}
	if step := int(frac * 10); step > p.lastStep {
		p.lastStep = step
		fmt.Fprintf(p.w, "pregen: %3.0f%% %s (%s)\n", 100*frac, detail, elapsed.Round(time.Millisecond))
	}
}

func (p *progress) finish() {
	if p.terminal && p.drawn {
		fmt.Fprintln(p.w)
	}
}

// serializedWriter serializes the writes of several writers to one
// io.Writer. It is safe for concurrent use.
type serializedWriter struct {
	mu sync.Mutex // protects w
	w  io.Writer
}

func (l *serializedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
