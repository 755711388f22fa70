// Package loadgen drives an rtp server with teleport requests at a fixed
// rate, open loop, and measures how it answers.
//
// Run schedules requests on a fixed timeline (request i is due at start +
// i/Rate) whatever the server does: a slow answer does not delay the
// schedule, so the generator does not fall into coordinated omission. Each
// request's latency is measured from its due time, so time spent waiting
// for a free worker (all busy with slow answers) counts; its service time,
// from the moment it was actually sent, is reported beside it.
//
// The generator's own lateness is not charged to the server: timers wake
// up late (often by half a millisecond), so a request whose timer woke
// late is measured from the wake-up instead of the due time, and the
// worst such lateness is reported apart (Result.TimerLag). Waiting for a
// free worker is never excused this way. Burst makes N players join at
// once and ask the login sink for a location each.
package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/rtpengine/rtp/client"
)

// Defaults of Config and BurstConfig.
const (
	DefaultRegion      = "default"
	DefaultConcurrency = 64
	DefaultPlayers     = 1000
	DefaultTimeout     = 10 * time.Second
	// MaxRequests bounds Rate x Duration.
	MaxRequests = 100_000_000
)

// Config describes a fixed-rate run. It is a plain value; its zero value
// is not a valid run (BaseURL, Rate and Duration are required), every other
// field has a default.
type Config struct {
	// BaseURL is the server, such as "http://127.0.0.1:8080". Required.
	BaseURL string
	// Token is the admin token sent as a bearer token. Default "".
	Token string
	// Region is the region teleports ask. Default DefaultRegion.
	Region string
	// Rate is the number of requests per second. Required, > 0.
	Rate float64
	// Duration is how long requests are scheduled; the run sends
	// round(Rate x Duration) requests (at least 1). Required, > 0.
	Duration time.Duration
	// Concurrency caps the requests in flight (teleports; completions
	// have as many again). A request due while all are busy waits, and
	// that wait counts in its latency. Default DefaultConcurrency (64).
	Concurrency int
	// Complete completes each successful teleport (POST .../complete),
	// off the measured path, by separate workers. Default false.
	Complete bool
	// Players is the number of distinct player names used in turn
	// ("load-0" ...). Default DefaultPlayers (1000).
	Players int
	// Sink names the sink teleports ask. Default "": the general sink.
	Sink string
	// Wait is the teleport's waitMs (how long the server waits on a
	// miss); 0 leaves the server's default, negative asks for no wait.
	// Default 0.
	Wait time.Duration
	// Timeout bounds each request. Default DefaultTimeout (10 s).
	Timeout time.Duration
	// WarmConns connections are opened (GET /healthz in parallel) before
	// the timeline starts, so the first requests do not pay for the
	// connection setup. Default 0.
	WarmConns int
	// Get, when set, makes every request a GET of this path (relative to
	// BaseURL, with its query if any) instead of a teleport: for cached
	// resources such as map tiles. A 200 or 304 answer counts as served;
	// the body is read to its end. Region, Sink, Players, Wait and
	// Complete are then unused. Default "": teleports.
	Get string
	// HTTPClient sends the requests. Default: a client of its own whose
	// Transport keeps 2 x Concurrency idle keep-alive connections.
	HTTPClient *http.Client
}

// Result are the figures of a run: a plain value, owned by the caller.
type Result struct {
	// Sent counts the requests sent; OK those answered with a location;
	// Misses those answered 503 no-location; Errors every other outcome
	// (other answers, transport errors, timeouts). Sent = OK + Misses +
	// Errors once the run is over.
	Sent, OK, Errors, Misses uint64
	// ErrorCodes counts Errors by API code ("transport" for a request
	// without an answer, "http-<status>" for an answer without a code).
	ErrorCodes map[string]uint64
	// Completed and CompleteErrors count the completions (Config.Complete).
	Completed, CompleteErrors uint64
	// P50, P90, P99 and Max are latencies from each request's scheduled
	// time to its answer, over every request whatever its outcome.
	P50, P90, P99, Max time.Duration
	// ServiceP50, ServiceP99 and ServiceMax are from the request's actual
	// send to its answer.
	ServiceP50, ServiceP99, ServiceMax time.Duration
	// MaxQueue is the longest a due request waited for a free worker.
	MaxQueue time.Duration
	// TimerLag is the generator's worst lateness in waking up for a due
	// request (not counted in the latencies).
	TimerLag time.Duration
	// Elapsed is from the start of the timeline to the last answer.
	Elapsed time.Duration
	// Achieved is the rate of answers: (OK + Misses + Errors) / Elapsed.
	Achieved float64
	// Latency and Service hold every measurement.
	Latency, Service *Histogram
}

func (c Config) withDefaults() (Config, error) {
	if c.BaseURL == "" {
		return c, errors.New("loadgen: no base URL")
	}
	if !(c.Rate > 0) || math.IsInf(c.Rate, 0) {
		return c, fmt.Errorf("loadgen: rate %v: must be a positive number", c.Rate)
	}
	if c.Duration <= 0 {
		return c, fmt.Errorf("loadgen: duration %v: must be positive", c.Duration)
	}
	if c.Rate*c.Duration.Seconds() > MaxRequests {
		return c, fmt.Errorf("loadgen: rate x duration = %.0f requests, more than %d", c.Rate*c.Duration.Seconds(), MaxRequests)
	}
	if c.Concurrency < 0 || c.Players < 0 || c.WarmConns < 0 {
		return c, errors.New("loadgen: negative concurrency, players or warm connections")
	}
	if c.Region == "" {
		c.Region = DefaultRegion
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Players == 0 {
		c.Players = DefaultPlayers
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	return c, nil
}

// newHTTPClient returns a client whose transport keeps conns idle
// keep-alive connections to the server.
func newHTTPClient(conns int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = conns
	t.MaxIdleConnsPerHost = conns
	t.DisableCompression = true
	return &http.Client{Transport: t}
}

// closeIdle closes the idle connections of a client Run made itself.
func closeIdle(hc *http.Client, own bool) {
	if own {
		hc.CloseIdleConnections()
	}
}

// tally is one worker's figures, merged at the end.
type tally struct {
	ok, errs, misses uint64
	codes            map[string]uint64
	lat, svc         Histogram
	maxQueue         time.Duration
	last             time.Time
}

func (t *tally) outcome(err error) {
	switch miss, code := classify(err); {
	case err == nil:
		t.ok++
	case miss:
		t.misses++
	default:
		t.errs++
		t.codes[code]++
	}
}

// classify tells whether err is a miss (503 no-location) and otherwise
// names it: its API code, "http-<status>" for an answer without a code,
// or "transport" for a request without an answer.
func classify(err error) (miss bool, code string) {
	if err == nil {
		return false, ""
	}
	var ae *client.APIError
	switch {
	case !errors.As(err, &ae):
		return false, "transport"
	case ae.Code == client.CodeNoLocation:
		return true, ae.Code
	case ae.Code != "":
		return false, ae.Code
	default:
		return false, "http-" + strconv.Itoa(ae.Status)
	}
}

func (r *Result) add(t *tally) {
	r.OK += t.ok
	r.Errors += t.errs
	r.Misses += t.misses
	for k, v := range t.codes {
		r.ErrorCodes[k] += v
	}
	r.Latency.Merge(&t.lat)
	r.Service.Merge(&t.svc)
	r.MaxQueue = max(r.MaxQueue, t.maxQueue)
}

func (r *Result) finish(start, last time.Time) {
	r.P50, r.P90, r.P99, r.Max = r.Latency.Quantile(0.5), r.Latency.Quantile(0.9), r.Latency.Quantile(0.99), r.Latency.Max()
	r.ServiceP50, r.ServiceP99, r.ServiceMax = r.Service.Quantile(0.5), r.Service.Quantile(0.99), r.Service.Max()
	if !last.IsZero() {
		r.Elapsed = last.Sub(start)
	}
	if r.Elapsed > 0 {
		r.Achieved = float64(r.OK+r.Misses+r.Errors) / r.Elapsed.Seconds()
	}
}

// Run sends the requests of cfg on its timeline and returns the figures.
// Runs are independent: Run may be called from several goroutines at once.
// When ctx ends early it stops scheduling, waits for the requests in
// flight and returns the figures so far with ctx's error.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	hc, own := cfg.HTTPClient, cfg.HTTPClient == nil
	if own {
		hc = newHTTPClient(2 * cfg.Concurrency)
	}
	defer closeIdle(hc, own)
	c := client.New(cfg.BaseURL, client.Options{Token: cfg.Token, HTTPClient: hc})
	if err := c.Err(); err != nil {
		return Result{}, err
	}
	warm(ctx, c, cfg.WarmConns, cfg.Timeout)

	total := max(int(math.Round(cfg.Rate*cfg.Duration.Seconds())), 1)
	type slot struct {
		i   int
		due time.Time
	}
	slots := make(chan slot, cfg.Concurrency)
	var completions chan uint64
	var cwg sync.WaitGroup
	var completed, completeErrs uint64
	var cmu sync.Mutex
	if cfg.Complete {
		completions = make(chan uint64, 4*cfg.Concurrency)
		for range cfg.Concurrency {
			cwg.Go(func() {
				var ok, bad uint64
				for id := range completions {
					cctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
					if c.Complete(cctx, id) == nil {
						ok++
					} else {
						bad++
					}
					cancel()
				}
				cmu.Lock()
				completed += ok
				completeErrs += bad
				cmu.Unlock()
			})
		}
	}

	res := Result{ErrorCodes: map[string]uint64{}, Latency: &Histogram{}, Service: &Histogram{}}
	var mu sync.Mutex
	var last time.Time
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Go(func() {
			t := &tally{codes: map[string]uint64{}}
			for s := range slots {
				sent := time.Now()
				t.maxQueue = max(t.maxQueue, sent.Sub(s.due))
				rctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
				var tp client.Teleport
				var err error
				if cfg.Get != "" {
					err = get(rctx, hc, cfg.BaseURL+cfg.Get)
				} else {
					tp, err = c.Teleport(rctx, cfg.Region, client.TeleportRequest{
						Player: "load-" + strconv.Itoa(s.i%cfg.Players), Sink: cfg.Sink, Wait: cfg.Wait})
				}
				cancel()
				end := time.Now()
				t.lat.Record(end.Sub(s.due))
				t.svc.Record(end.Sub(sent))
				t.last = end
				t.outcome(err)
				if err == nil && completions != nil {
					completions <- tp.ID
				}
			}
			mu.Lock()
			res.add(t)
			if t.last.After(last) {
				last = t.last
			}
			mu.Unlock()
		})
	}

	start := time.Now()
	interval := float64(time.Second) / cfg.Rate
	timer := time.NewTimer(0)
	defer timer.Stop()
	var runErr error
	// wake is when the scheduler last woke from a timer: requests due
	// before it are measured from it (the timer's lateness is the
	// generator's). A send blocked on busy workers does not move it, so
	// that wait stays in the latencies.
	var wake time.Time
schedule:
	for i := 0; i < total; i++ {
		due := start.Add(time.Duration(float64(i) * interval))
		if d := time.Until(due); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				runErr = ctx.Err()
				break schedule
			}
			wake = time.Now()
			res.TimerLag = max(res.TimerLag, wake.Sub(due))
		}
		from := due
		if wake.After(due) {
			from = wake
		}
		select {
		case slots <- slot{i, from}:
			res.Sent++
		case <-ctx.Done():
			runErr = ctx.Err()
			break schedule
		}
	}
	close(slots)
	wg.Wait()
	if completions != nil {
		close(completions)
		cwg.Wait()
	}
	res.Completed, res.CompleteErrors = completed, completeErrs
	res.finish(start, last)
	return res, runErr
}

// get sends one GET of url and reads the answer to its end: a 200 or 304
// is served, anything else an error.
func get(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotModified {
		return fmt.Errorf("loadgen: GET %s: %s", url, resp.Status)
	}
	return nil
}

// warm opens n connections by sending n health checks at once.
func warm(ctx context.Context, c *client.Client, n int, timeout time.Duration) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			wctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			_ = c.Healthz(wctx)
		})
	}
	wg.Wait()
}
