package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/server"
	"github.com/rtpengine/rtp/webmap"
	"github.com/rtpengine/rtp/webmap/enginemap"
)

type serveOptions struct {
	engineOptions
	listen     string
	cpuProfile string
	tracePath  string
	memProfile string
}

func newServeCmd() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the engine and serve the HTTP API",
		Long: `Serve runs every configured region and serves the HTTP API (see
api/openapi.yaml) until it receives SIGINT or SIGTERM. Without flags it uses
the built-in configuration: the procedural world, the data under ./rtp-data,
listening on 127.0.0.1:8080.

On start it prints "listening on http://ADDR" (the address actually bound:
--listen 127.0.0.1:0 picks a free port). On a signal it stops accepting
requests, lets those in flight finish, then shuts the engine down in order:
reservations closed, locations and memory saved for the next start.

With --world SAVE every region draws from a Minecraft Java save folder,
read-only (--dimension picks overworld, nether or end). A region whose shape
the configuration does not write is then laid over the save: a circle round
the spawn (or round the middle of the finished chunks when they lie off to
one side of it), just wide enough to cover every finished chunk and inside
the world border; --x, --z and --radius replace what they name. The shape
chosen is logged. The circle derived is kept in the data directory
(derived-regions.json, by save, dimension and region) and used on every
later start, so that it does not move as players explore; a shape written in
the configuration, or the flags, win over it. Remove its entry to derive it
again. A save without the dimension's region folder, or a region holding no
finished chunk, is an error before anything starts.

With --config, POST /v1/admin/reload re-reads that file (with the flags
applied again) and applies what can change while running; the save is not
scanned again. SIGHUP does the same and also reads the admin token file
again (without --config it reads only the token file); a reload that fails
is logged and changes nothing. SIGINT and SIGTERM stop in order.

Serve runs Go's garbage collector with GOGC=25 (but lets the heap grow by
at least 32 MiB between collections) unless the environment sets GOGC: its
heap is mostly long-lived caches, and letting it double before each
collection (Go's default, 100) puts every allocation after a start on
memory never touched, a page fault each. A higher GOGC trades memory for
fewer collections.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), &o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.register(cmd)
	cmd.Flags().StringVar(&o.listen, "listen", "", "address to listen on, host:port (default: the configuration's server.listen)")
	cmd.Flags().StringVar(&o.cpuProfile, "cpu-profile", "", "write a CPU profile of the whole run to this file (for go tool pprof)")
	cmd.Flags().StringVar(&o.tracePath, "trace", "", "write an execution trace of the whole run to this file (for go tool trace)")
	cmd.Flags().StringVar(&o.memProfile, "mem-profile", "", "write a profile of the whole run's allocations to this file at exit (for go tool pprof)")
	return cmd
}

func (o *serveOptions) load(ctx context.Context, log *slog.Logger) (*config.Config, error) {
	cfg, err := o.engineOptions.load(ctx, log)
	if err != nil {
		return nil, err
	}
	if o.listen != "" {
		cfg.Server.Listen = o.listen
	}
	return cfg, nil
}

func runServe(ctx context.Context, o *serveOptions, stdout, stderr io.Writer) (err error) {
	logger, err := o.logger(stderr)
	if err != nil {
		return err
	}
	mem := &allocsRecorder{}
	for _, r := range []struct {
		flag, path string
		start      func(io.Writer) error
		stop       func()
	}{
		{"--cpu-profile", o.cpuProfile, pprof.StartCPUProfile, pprof.StopCPUProfile},
		{"--trace", o.tracePath, trace.Start, trace.Stop},
		{"--mem-profile", o.memProfile, mem.start, mem.stop},
	} {
		if r.path == "" {
			continue
		}
		stop, err := startRecording(r.flag, r.path, r.start, r.stop)
		if err != nil {
			return err
		}
		defer func() {
			if perr := stop(); err == nil {
				err = perr
			}
		}()
	}
	defer startGCTuner(&gcTuner{pct: serveGCPercent, floor: serveGCFloor})()
	// SIGHUP reloads, as daemons do: caught from the start, so that one
	// sent while the engine starts does not end the process (its default),
	// and applied once the server runs.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	cfg, err := o.load(ctx, logger)
	if err != nil {
		return err
	}
	token, err := cfg.Auth.Resolve()
	if err != nil {
		return err
	}
	spec, err := cfg.Spec()
	if err != nil {
		return err
	}
	e, err := engine.New(ctx, spec, engine.Options{Logger: logger, Software: Version})
	if err != nil {
		return err
	}
	// From here on the engine is shut down on every path: by Run below, or
	// by Close if serving never started.
	running := false
	defer func() {
		if !running {
			if cerr := e.Close(context.Background()); err == nil {
				err = cerr
			}
		}
	}()
	opts := server.Options{Logger: logger, Token: server.AdminToken(token.Reveal()), MaxBodyBytes: cfg.Server.MaxBodyBytes,
		AllowedHosts: cfg.Server.AllowedHosts}
	// auth is the auth section in force: a reload replaces it, and the
	// server then reads its token again (a rotated token file applies).
	var authMu sync.Mutex
	auth := cfg.Auth
	opts.ReloadToken = func() (string, error) {
		authMu.Lock()
		a := auth
		authMu.Unlock()
		tok, err := a.Resolve()
		return tok.Reveal(), err
	}
	if o.configPath != "" {
		opts.Reload = func(ctx context.Context) error {
			c, err := o.load(ctx, logger)
			if err != nil {
				return &engine.Error{Reason: engine.ReasonInvalid, Err: err}
			}
			spec, err := c.Spec()
			if err != nil {
				return &engine.Error{Reason: engine.ReasonInvalid, Err: err}
			}
			if err := e.Reload(ctx, spec); err != nil {
				return err
			}
			authMu.Lock()
			auth = c.Auth
			authMu.Unlock()
			return nil
		}
	}
	mb := enginemap.New(e)
	defer mb.Close()
	m, err := webmap.New(mb, webmap.Options{Logger: logger})
	if err != nil {
		return err
	}
	opts.Map = m.Handler()
	srv, err := server.New(e, opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	running = true

	// The engine runs until the server has stopped: its context is not
	// the command's, so a signal first stops the HTTP intake.
	engCtx, stopEngine := context.WithCancel(context.Background())
	defer stopEngine()
	engDone := make(chan error, 1)
	srvCtx, stopServer := context.WithCancel(ctx)
	defer stopServer()
	go func() {
		err := e.Run(engCtx)
		stopServer() // an engine that stops on its own takes the server down
		engDone <- err
	}()
	reloads := make(chan struct{})
	go func() {
		defer close(reloads)
		reloadOnHangup(srvCtx, hup, srv, o.configPath != "", logger)
	}()
	// The map renders the tiles a page opens on ahead, in the background,
	// yielding to the engine's promotions; it stops with the server.
	prerendered := make(chan struct{})
	go func() {
		defer close(prerendered)
		if _, err := m.Prerender(srvCtx, webmap.PrerenderOptions{Busy: engineBusy(e)}); err != nil && srvCtx.Err() == nil {
			logger.Warn("map prerender stopped", "err", err)
		}
	}()
	logger.Info("serving", "addr", ln.Addr().String(), "regions", e.Regions(), "data", cfg.DataDir)
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	srvErr := srv.Serve(srvCtx, ln, serverTimeouts(cfg.Server))
	stopServer()
	<-reloads
	<-prerendered // before the engine it reads goes
	stopEngine()
	engErr := <-engDone
	if srvErr != nil {
		srvErr = fmt.Errorf("serve: %w", srvErr)
	}
	if engErr != nil {
		engErr = fmt.Errorf("serve: engine: %w", engErr)
	} else if ctx.Err() == nil && srvErr == nil {
		engErr = errors.New("serve: the engine stopped")
	}
	if err := errors.Join(srvErr, engErr); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}

// serverTimeouts returns the HTTP server's timeouts the configuration's
// server section sets.
func serverTimeouts(s config.Server) server.Timeouts {
	return server.Timeouts{
		ReadHeader: s.ReadHeaderTimeout,
		Read:       s.ReadTimeout,
		Write:      s.WriteTimeout,
		Idle:       s.IdleTimeout,
		Shutdown:   s.ShutdownTimeout,
	}
}

// reloadOnHangup reloads the configuration file (when the server has one)
// and the admin token on every SIGHUP until ctx ends. A reload that fails
// is logged and changes nothing: the server goes on as it was.
func reloadOnHangup(ctx context.Context, hup <-chan os.Signal, srv *server.Server, hasConfig bool, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		what := "the admin token"
		if hasConfig {
			what = "the configuration file and the admin token"
		}
		log.Info("serve: SIGHUP: reloading " + what)
		if err := srv.Reload(ctx); err != nil {
			args := []any{"err", err}
			if cause := errors.Unwrap(err); cause != nil {
				args = append(args, "cause", cause)
			}
			log.Warn("serve: SIGHUP: the reload failed; the server goes on as it was", args...)
			continue
		}
		log.Info("serve: SIGHUP: reloaded")
	}
}

// prerenderQuiet is how long the map waits after the last request for a
// place before it renders ahead: a server answering teleports keeps its
// processors for them (under a steady load the refill's pauses would
// otherwise let a render start between two requests, and the render's
// milliseconds of processor time show in the requests' latency tail).
const prerenderQuiet = time.Second

// engineBusy returns the map's Busy predicate for e: true while places
// were asked for within prerenderQuiet, while a region is promoting, or
// while it holds a short sink and cold locations to fill it with
// (promotions into short sinks come before any other background work). A
// group sink that backs off (its chunks had no room for a subspace) is
// not waiting for cold locations, and does not count.
func engineBusy(e *engine.Engine) func() bool {
	return func() bool {
		if !e.Quiet(prerenderQuiet) {
			return true
		}
		for _, name := range e.Regions() {
			st, err := e.Stats(name)
			if err != nil {
				continue
			}
			p := st.Pipeline
			if p.Promoting > 0 {
				return true
			}
			if p.Cold.Fill == 0 {
				continue
			}
			for _, s := range p.Sinks {
				if s.Fill < s.Capacity && (s.Group == nil || s.Group.Backoff == 0) {
					return true
				}
			}
		}
		return false
	}
}

// allocsRecorder records the allocations of a run for --mem-profile: the
// runtime samples them from the start, and stop writes the profile of
// every sampled allocation since to the writer start was given.
type allocsRecorder struct{ w io.Writer }

func (a *allocsRecorder) start(w io.Writer) error { a.w = w; return nil }

func (a *allocsRecorder) stop() {
	// A failed write shows as an empty or cut profile, which pprof
	// refuses with its own message.
	_ = pprof.Lookup("allocs").WriteTo(a.w, 0)
}

// startRecording runs start on a new file at path, for the flag named
// flag (--cpu-profile, --trace), and returns the function that stops the
// recording and closes the file.
func startRecording(flag, path string, start func(io.Writer) error, stop func()) (func() error, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return func() error {
		stop()
		return f.Close()
	}, nil
}
