// Command tracewait reads an execution trace of rtp serve (rtp serve
// --trace FILE, under load) and tells what held the processors while
// HTTP goroutines waited to run.
//
//	go run . trace.out
//
// For every HTTP goroutine (one whose stack holds net/http's connection
// serving) it measures each wait from runnable to running, prints their
// distribution, and, for the waits longer than -min, how long each kind
// of goroutine held a processor (P) meanwhile: running, or inside a
// system call that kept its P (kind:syscall). A P that nothing held
// during such a wait shows as idle: the wait was then the operating
// system's or the host's (the thread was not scheduled), not Go's.
//
// It is a separate module so that the trace parser
// (golang.org/x/exp/trace) stays out of rtp's own dependencies.
package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

func main() {
	minWait := flag.Duration("min", 200*time.Microsecond, "attribute waits longer than this")
	skip := flag.Duration("skip", 0, "leave out the trace's first stretch of this length (the server's start)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: tracewait [-min 200us] [-skip 0s] trace.out")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "tracewait:", err)
		os.Exit(1)
	}
	defer f.Close()
	r, err := analyze(f, *minWait, *skip)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tracewait:", err)
		os.Exit(1)
	}
	r.print(os.Stdout, *minWait)
}

// kindOf names the kind of goroutine a stack belongs to: "http" for a
// request's, "writer" for the location writer's, "refill" for a worker
// of the pipeline (which runs promotions and screenings in turn),
// "screen" and "promote" for the refill's goroutines of servers that
// started one per unit, "gc" for a mark worker, else the first rtp
// function on the stack, else "".
func kindOf(st trace.Stack) string {
	k := ""
	for f := range st.Frames() {
		fn := f.Func
		switch {
		case strings.Contains(fn, "net/http.(*conn).serve"), strings.Contains(fn, "net/http.(*connReader).backgroundRead"):
			return "http"
		case strings.Contains(fn, "rowqueue."):
			return "writer"
		case strings.Contains(fn, "Pipeline).worker"):
			return "refill"
		case strings.Contains(fn, "gcBgMarkWorker"):
			return "gc"
		case strings.Contains(fn, "Pipeline).screen"), strings.Contains(fn, "Pipeline).runScreening"):
			k = "screen"
		case strings.Contains(fn, "Pipeline).promote"), strings.Contains(fn, "Pipeline).startSingle"):
			if k == "" || strings.HasPrefix(k, "rtp:") {
				k = "promote"
			}
		case strings.Contains(fn, "rtpengine/rtp/") && (k == "" || strings.HasPrefix(k, "std:")):
			k = "rtp:" + fn[strings.LastIndex(fn, "/")+1:]
		case k == "" || strings.HasPrefix(k, "std:"):
			// Outside rtp: the outermost frame, a weak name a later
			// stack may replace.
			k = "std:" + fn[strings.LastIndex(fn, "/")+1:]
		}
	}
	return k
}

// settled reports whether kind k is final: a later stack cannot name the
// goroutine better.
func settled(k string) bool {
	return k == "http" || k == "writer" || k == "refill" || k == "screen" || k == "gc"
}

type goroutine struct {
	kind     string
	runnable trace.Time
	waiting  bool             // runnable, not yet running
	held     map[string]int64 // the processors' hold times when it became runnable (http only)
	blocked  trace.Time       // when it last blocked (http only; 0: not blocked)
	site     string           // where it blocked
}

type proc struct {
	g     trace.GoID // trace.NoGoroutine: none
	since trace.Time
	sys   bool // g is in a system call, still holding this P
}

type result struct {
	waits    []int64          // every HTTP wait, nanoseconds
	long     int              // waits longer than min
	longSum  int64            // their total
	during   map[string]int64 // what held the Ps during them
	total    map[string]int64 // what held the Ps over the whole trace
	maxProcs int
	// blocks is how long HTTP goroutines were blocked, by reason and
	// place (the innermost frames outside the runtime), leaving out the
	// wait for a request to arrive.
	blocks map[string]*blockSum
}

type blockSum struct {
	n, over, sum, max int64 // over: blocks longer than min
}

// blockSite names where a goroutine blocked: the reason and the first
// frames outside the runtime and the sync packages, or "" for a wait on
// the network (an idle connection).
func blockSite(reason string, st trace.Stack) string {
	var fs []string
	for f := range st.Frames() {
		fn := f.Func
		if strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "internal/") {
			continue
		}
		if strings.HasPrefix(fn, "net.") || strings.HasPrefix(fn, "net/http.(*connReader)") || strings.HasPrefix(fn, "bufio.") {
			return ""
		}
		fs = append(fs, fn[strings.LastIndex(fn, "/")+1:])
		if len(fs) == 3 {
			break
		}
	}
	return reason + " at " + strings.Join(fs, " < ")
}

func analyze(rd io.Reader, minWait, skip time.Duration) (*result, error) {
	tr, err := trace.NewReader(rd)
	if err != nil {
		return nil, err
	}
	gs := map[trace.GoID]*goroutine{}
	procs := map[trace.ProcID]*proc{}
	res := &result{during: map[string]int64{}, total: map[string]int64{}, blocks: map[string]*blockSum{}}
	var now, from trace.Time // from: the first event's time plus skip
	counting := func() bool { return now >= from }
	g := func(id trace.GoID) *goroutine {
		x := gs[id]
		if x == nil {
			x = &goroutine{}
			gs[id] = x
		}
		return x
	}
	label := func(p *proc) string {
		k := g(p.g).kind
		if k == "" {
			k = "other"
		}
		if p.sys {
			k += ":syscall"
		}
		return k
	}
	// account adds the time p was held since its last account.
	account := func(p *proc) {
		if p.g != trace.NoGoroutine && counting() {
			res.total[label(p)] += int64(now - max(p.since, from))
		}
		p.since = now
	}
	snapshot := func() map[string]int64 {
		for _, p := range procs {
			account(p)
		}
		return maps.Clone(res.total)
	}
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		now = ev.Time()
		if from == 0 {
			from = now + trace.Time(skip)
		}
		if ev.Kind() != trace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			continue
		}
		id := st.Resource.Goroutine()
		x := g(id)
		if !settled(x.kind) {
			stacks := []trace.Stack{st.Stack}
			if ev.Goroutine() == id {
				// The event's own stack is the goroutine's only when it
				// emitted the event (not when another unblocked it).
				stacks = append(stacks, ev.Stack())
			}
			for _, s := range stacks {
				if k := kindOf(s); k != "" && (x.kind == "" || strings.HasPrefix(x.kind, "std:") || settled(k) || k == "promote") {
					x.kind = k
				}
			}
		}
		from, to := st.Goroutine()
		if x.kind == "http" && from == trace.GoRunning && to == trace.GoWaiting {
			// A wait for a request has no site: it must clear the last
			// block's, or that block would be counted again, from its
			// start, when the request comes.
			x.blocked, x.site = 0, ""
			if site := blockSite(st.Reason, st.Stack); site != "" {
				x.blocked, x.site = now, site
			}
		}
		if from == trace.GoWaiting && x.blocked != 0 {
			// A block woken before the measured stretch is not counted.
			if counting() {
				d := int64(now - x.blocked)
				b := res.blocks[x.site]
				if b == nil {
					b = &blockSum{}
					res.blocks[x.site] = b
				}
				b.n++
				b.sum += d
				b.max = max(b.max, d)
				if d > int64(minWait) {
					b.over++
				}
			}
			x.blocked = 0
		}
		if to == trace.GoRunnable {
			x.waiting, x.runnable = true, now
			if x.kind == "http" {
				x.held = snapshot()
			}
		}
		if from == trace.GoRunning || from == trace.GoSyscall {
			for _, p := range procs {
				if p.g != id {
					continue
				}
				account(p)
				if to == trace.GoSyscall {
					p.sys = true
				} else {
					p.g, p.sys = trace.NoGoroutine, false
				}
			}
		}
		if to != trace.GoRunning {
			continue
		}
		pid := ev.Proc()
		p := procs[pid]
		if p == nil {
			p = &proc{g: trace.NoGoroutine}
			procs[pid] = p
			res.maxProcs = max(res.maxProcs, len(procs))
		}
		account(p)
		p.g, p.sys = id, false
		if x.waiting && x.held != nil && counting() {
			d := int64(now - x.runnable)
			res.waits = append(res.waits, d)
			if d > int64(minWait) {
				res.long++
				res.longSum += d
				for k, v := range snapshot() {
					if dv := v - x.held[k]; dv > 0 {
						res.during[k] += dv
					}
				}
			}
		}
		x.waiting, x.held = false, nil
	}
	for _, p := range procs {
		account(p)
	}
	return res, nil
}

func (r *result) print(w io.Writer, minWait time.Duration) {
	slices.Sort(r.waits)
	n := len(r.waits)
	if n == 0 {
		fmt.Fprintln(w, "no HTTP goroutine waited: is this a trace of rtp serve under load?")
		return
	}
	q := func(f float64) time.Duration { return time.Duration(r.waits[min(int(f*float64(n)), n-1)]) }
	fmt.Fprintf(w, "HTTP waits, runnable to running: %d; p50 %v, p90 %v, p99 %v, p99.9 %v, max %v\n",
		n, q(0.5), q(0.9), q(0.99), q(0.999), time.Duration(r.waits[n-1]))
	ps := int64(r.maxProcs)
	fmt.Fprintf(w, "%d waits over %v, %v in all; the %d Ps meanwhile (%v of P time) were held by:\n",
		r.long, minWait, time.Duration(r.longSum), ps, time.Duration(ps*r.longSum))
	var held int64
	for _, v := range r.during {
		held += v
	}
	printKinds(w, r.during)
	fmt.Fprintf(w, "  %-28s %10v\n", "(idle)", time.Duration(max(ps*r.longSum-held, 0)).Round(time.Microsecond))
	fmt.Fprintln(w, "over the whole trace the Ps were held by:")
	printKinds(w, r.total)
	fmt.Fprintf(w, "HTTP goroutines blocked (count, over %v, total, max), not waiting for a request:\n", minWait)
	ks := slices.Collect(maps.Keys(r.blocks))
	sort.Slice(ks, func(i, j int) bool { return r.blocks[ks[i]].sum > r.blocks[ks[j]].sum })
	for _, k := range ks[:min(len(ks), 15)] {
		b := r.blocks[k]
		fmt.Fprintf(w, "  %7d %5d %10v %10v  %s\n", b.n, b.over, time.Duration(b.sum).Round(time.Microsecond), time.Duration(b.max).Round(time.Microsecond), k)
	}
}

func printKinds(w io.Writer, m map[string]int64) {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return m[ks[i]] > m[ks[j]] })
	for _, k := range ks {
		if d := time.Duration(m[k]); d >= time.Millisecond {
			fmt.Fprintf(w, "  %-28s %10v\n", k, d.Round(time.Microsecond))
		}
	}
}
