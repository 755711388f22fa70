package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/rtpengine/rtp/client"
)

// DefaultBurstSink is the sink a burst's teleports ask.
const DefaultBurstSink = "login"

// BurstConfig describes a join burst: Players players join at once, each
// then asking for a location from the login sink. Its zero value is not a
// valid burst (BaseURL and Players are required).
type BurstConfig struct {
	// BaseURL is the server. Required.
	BaseURL string
	// Token is the admin token sent as a bearer token. Default "".
	Token string
	// Region is the region joined. Default DefaultRegion.
	Region string
	// Players is the number of players joining ("join-0" ...). Required,
	// 1 to 100,000.
	Players int
	// Concurrency caps the players in flight. Default Players (all at
	// once).
	Concurrency int
	// Sink names the sink the teleports ask. Default DefaultBurstSink.
	Sink string
	// Wait is the teleport's waitMs (see Config.Wait). Default 0.
	Wait time.Duration
	// Complete completes each teleport once the burst is over, and Quit
	// makes each player leave then. Default false.
	Complete, Quit bool
	// Timeout bounds each request. Default DefaultTimeout (10 s).
	Timeout time.Duration
	// HTTPClient sends the requests. Default: a client of its own keeping
	// Concurrency idle connections.
	HTTPClient *http.Client
}

// BurstResult are the figures of a burst: a plain value.
type BurstResult struct {
	// Players is the number of players that took part.
	Players int
	// Joined counts the joins accepted; JoinErrors the others.
	Joined, JoinErrors uint64
	// OK, Misses and Errors count the teleports, as in Result.
	OK, Misses, Errors uint64
	// BySink counts the locations served by the sink that served them
	// (a login reserve that runs dry falls through to the general sink).
	BySink map[string]uint64
	// ErrorCodes counts teleport errors by code (as in Result), and join
	// errors by "join " and the code.
	ErrorCodes map[string]uint64
	// Completed, CompleteErrors and Quits count the clean-up calls.
	Completed, CompleteErrors, Quits uint64
	// P50, P99 and Max are the teleports' latencies, from the burst's
	// start (the join included) to the location.
	P50, P99, Max time.Duration
	// Elapsed is from the start of the burst to its last answer.
	Elapsed time.Duration
}

// Burst makes cfg.Players players join and ask for a location, all at
// once, and returns the figures.
func Burst(ctx context.Context, cfg BurstConfig) (BurstResult, error) {
	if cfg.BaseURL == "" {
		return BurstResult{}, errors.New("loadgen: no base URL")
	}
	if cfg.Players < 1 || cfg.Players > 100_000 {
		return BurstResult{}, fmt.Errorf("loadgen: %d players: want 1 to 100000", cfg.Players)
	}
	if cfg.Concurrency <= 0 || cfg.Concurrency > cfg.Players {
		cfg.Concurrency = cfg.Players
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	if cfg.Sink == "" {
		cfg.Sink = DefaultBurstSink
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	hc, own := cfg.HTTPClient, cfg.HTTPClient == nil
	if own {
		hc = newHTTPClient(cfg.Concurrency)
	}
	defer closeIdle(hc, own)
	c := client.New(cfg.BaseURL, client.Options{Token: cfg.Token, HTTPClient: hc})
	if err := c.Err(); err != nil {
		return BurstResult{}, err
	}

	res := BurstResult{Players: cfg.Players, ErrorCodes: map[string]uint64{}, BySink: map[string]uint64{}}
	ids := make([]uint64, cfg.Players)
	var (
		mu   sync.Mutex // protects res, lat and last
		lat  Histogram
		last time.Time
	)
	gate := make(chan struct{})
	next := make(chan int, cfg.Players)
	for i := range cfg.Players {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	var start time.Time
	for range cfg.Concurrency {
		wg.Go(func() {
			<-gate
			t := &tally{codes: map[string]uint64{}}
			var joined, joinErrs uint64
			bySink := map[string]uint64{}
			for i := range next {
				if ctx.Err() != nil {
					break
				}
				player := "join-" + strconv.Itoa(i)
				rctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
				err := c.Join(rctx, cfg.Region, player)
				if err != nil {
					joinErrs++
					_, code := classify(err)
					t.codes["join "+code]++
					cancel()
					continue
				}
				joined++
				tp, err := c.Teleport(rctx, cfg.Region, client.TeleportRequest{Player: player, Sink: cfg.Sink, Wait: cfg.Wait})
				cancel()
				end := time.Now()
				t.lat.Record(end.Sub(start))
				t.last = end
				t.outcome(err)
				if err == nil {
					ids[i] = tp.ID
					bySink[tp.Sink]++
				}
			}
			mu.Lock()
			defer mu.Unlock()
			res.Joined += joined
			res.JoinErrors += joinErrs
			res.OK += t.ok
			res.Misses += t.misses
			res.Errors += t.errs
			for k, v := range t.codes {
				res.ErrorCodes[k] += v
			}
			for k, v := range bySink {
				res.BySink[k] += v
			}
			lat.Merge(&t.lat)
			if t.last.After(last) {
				last = t.last
			}
		})
	}
	start = time.Now()
	close(gate)
	wg.Wait()
	if !last.IsZero() {
		res.Elapsed = last.Sub(start)
	}
	res.P50, res.P99, res.Max = lat.Quantile(0.5), lat.Quantile(0.99), lat.Max()
	if cfg.Complete || cfg.Quit {
		cleanup(c, cfg, ids, &res)
	}
	return res, ctx.Err()
}

// cleanup completes the burst's teleports and makes its players quit.
func cleanup(c *client.Client, cfg BurstConfig, ids []uint64, res *BurstResult) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, cfg.Concurrency)
	for i, id := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
			defer cancel()
			var done, bad, quit uint64
			if cfg.Complete && id != 0 {
				if c.Complete(ctx, id) == nil {
					done++
				} else {
					bad++
				}
			}
			if cfg.Quit && c.Quit(ctx, cfg.Region, "join-"+strconv.Itoa(i)) == nil {
				quit++
			}
			mu.Lock()
			res.Completed += done
			res.CompleteErrors += bad
			res.Quits += quit
			mu.Unlock()
		})
	}
	wg.Wait()
}
