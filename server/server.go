package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/terrain/archive"
)

// Engine is what the server needs of an *engine.Engine: exactly the methods
// its routes call. *engine.Engine implements it; tests may put a fake in
// its place to produce states a real engine cannot reach on demand.
//
// The methods keep the engine's contract: a failed call returns an
// *engine.Error whose Reason the server maps to an HTTP status (see the
// package documentation); any other error is answered 500.
//
// The claims routes use a ClaimStore (Options.Claims), not the engine: an
// engine that has a method Claims() *claims.Store, as *engine.Engine
// does, supplies its own store by default.
type Engine interface {
	Teleport(ctx context.Context, region string, req engine.Request) (engine.Location, error)
	GroupTeleport(ctx context.Context, region string, req engine.GroupRequest) ([]engine.GroupPlace, error)
	Complete(id uint64) error
	Cancel(id uint64) error
	Join(region, player string) error
	Quit(region, player string) error
	OpenQueue(region, player string, capacity int) error
	CloseQueue(region, player string) error
	ReserveWait(ctx context.Context, region, token string, wait time.Duration, done <-chan struct{}) (engine.Reservation, error)
	Redeem(region, token string) (engine.Location, error)
	Release(region, token string) error
	Stats(region string) (engine.Stats, error)
	Regions() []string
	Refill() engine.RefillStats
	Locations() engine.LocationWrites
	Archives() map[string]archive.Stats
	ScanReset(ctx context.Context, region string) error
	ScanPause(region string) error
	ScanResume(region string) error
	ExportMemory(region string, w io.Writer) error
	Ready() error
}

var _ Engine = (*engine.Engine)(nil)

// Defaults of Options.
const (
	// DefaultMaxBodyBytes is Options.MaxBodyBytes's default: 1 MiB.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultWait is how long a teleport waits on a miss when the request
	// does not say (waitMs).
	DefaultWait = 2 * time.Second
	// MaxWait bounds a request's waitMs.
	MaxWait = 30 * time.Second
	// MaxPlayerLen bounds a player name, in characters, as the engine
	// does.
	MaxPlayerLen = engine.MaxPlayerLen
	// MaxGroupPlayers bounds the players of a group teleport, as the
	// engine does (a region's own group size may be smaller).
	MaxGroupPlayers = engine.MaxGroupPlayers
)

// Options configure a Server. The zero value selects every default: no
// admin token (the mutating routes are open), a fresh metrics registry.
type Options struct {
	// Logger receives the server's log lines: failed requests (5xx) with
	// their detail, recovered panics, the listener's errors. Default
	// slog.Default().
	Logger *slog.Logger
	// Token is the admin token. When set, every POST, PUT and DELETE and
	// every /v1/admin/ route needs "Authorization: Bearer <token>".
	// Default "": those routes are open. (*Server).SetToken replaces it
	// while the server runs.
	Token AdminToken
	// AllowedHosts lists the host names (or IP addresses) the server
	// answers, compared without the port and in any letter case against a
	// request's Host; a request for another host is answered 421
	// misdirected. This stops DNS rebinding: a web page whose host name
	// has been pointed at the server's address. An entry "*" allows any
	// host. A list widens the loopback names: localhost, names under
	// .localhost and loopback IP addresses are always answered beside the
	// listed ones (no page of another site can make a browser send them). Default empty: on a TCP loopback listener Serve allows only
	// localhost, names under .localhost and loopback IP addresses (the
	// listener's among them), and elsewhere any host. A loopback service
	// reached through a proxy that passes the public host name on must
	// list that name (or "*"). Handler alone, which knows no listener,
	// applies only the list.
	AllowedHosts []string
	// MaxBodyBytes bounds a request body; a larger one is answered 413.
	// Default DefaultMaxBodyBytes (1 MiB).
	MaxBodyBytes int64
	// Registerer is where the server registers its HTTP metrics and the
	// engine collector; Gatherer is what /metrics serves. Set both or
	// neither. Default: a fresh registry holding also the Go and process
	// collectors.
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
	// Reload re-reads the configuration file and applies it (the engine's
	// Reload). It backs POST /v1/admin/reload: an *engine.Error maps by
	// its Reason (ReasonRestartNeeded: 409, ReasonInvalid: 400 with the
	// problems in the message); any other error is a 500. Default nil:
	// the route answers 409 restart-needed, saying that the server has no
	// file to reload.
	Reload func(ctx context.Context) error
	// ReloadToken, when set, reads the admin token again ("" for none);
	// POST /v1/admin/reload calls it after Reload succeeded and applies
	// its result with SetToken, so that a rotated token file takes effect
	// without a restart. When it fails the old token stays in force and
	// the reload is answered 500 internal saying so; its error goes to
	// the log and must not hold the token. Default nil: a reload keeps the
	// token.
	ReloadToken func() (string, error)
	// Map, when set, serves the web map: the server routes GET and HEAD
	// requests under /map/, /v1/map/, /v1/worlds/{world}/tiles/ and
	// /v1/worlds/{world}/meshes/ to it (after its host check and
	// metrics), with their full paths. Its routes are
	// read-only. Default nil: no map.
	Map http.Handler
	// DefaultWait is how long a teleport waits on a miss when its request
	// has no waitMs. Default DefaultWait (2 s); at most MaxWait.
	DefaultWait time.Duration
	// Clock measures request durations for the metrics. Default time.Now.
	Clock func() time.Time
	// Claims is the claims store the claims routes list, add to and
	// remove from. Default nil: the engine's own store, when the engine
	// has a method Claims() *claims.Store (as *engine.Engine does); New
	// fails when there is none.
	Claims ClaimStore
}

func (o Options) withDefaults() (Options, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.DefaultWait == 0 {
		o.DefaultWait = DefaultWait
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	var errs []error
	if o.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("server: MaxBodyBytes %d is negative", o.MaxBodyBytes))
	}
	if o.DefaultWait < 0 || o.DefaultWait > MaxWait {
		errs = append(errs, fmt.Errorf("server: DefaultWait %v is outside 0..%v", o.DefaultWait, MaxWait))
	}
	if (o.Registerer == nil) != (o.Gatherer == nil) {
		errs = append(errs, errors.New("server: set both Registerer and Gatherer, or neither"))
	}
	if _, err := newHostPolicy(o.AllowedHosts); err != nil {
		errs = append(errs, err)
	}
	if o.Registerer == nil {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		o.Registerer, o.Gatherer = reg, reg
	}
	return o, errors.Join(errs...)
}

// Server serves the HTTP API of one engine (see the package documentation).
// Make one with New; the zero value is not usable. A Server is safe for
// concurrent use; Serve may be called once.
type Server struct {
	e      Engine
	claims ClaimStore
	opts   Options
	log    *slog.Logger
	// token is the digest of the admin token; nil when there is none.
	token atomic.Pointer[tokenDigest]
	// hosts is the policy of the Host header from Options.AllowedHosts
	// (anyHost when empty).
	hosts   *hostPolicy
	mux     *http.ServeMux
	handler http.Handler
	metrics *httpMetrics
	// metricsHandler serves /metrics from Options.Gatherer.
	metricsHandler http.Handler

	// drain is cancelled when Serve starts its shutdown: teleports waiting
	// on a miss give up with ReasonShutdown instead of holding it up.
	drain     context.Context
	drainStop context.CancelFunc
}

// New returns a server of e. It registers its metrics (see the package
// documentation) with opts.Registerer and fails if they clash with metrics
// registered there already.
func New(e Engine, opts Options) (*Server, error) {
	if e == nil {
		return nil, errors.New("server: nil engine")
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	cs, err := claimStoreOf(e, opts.Claims)
	if err != nil {
		return nil, err
	}
	s := &Server{e: e, claims: cs, opts: opts, log: opts.Logger, mux: http.NewServeMux()}
	s.drain, s.drainStop = context.WithCancel(context.Background())
	s.SetToken(opts.Token.Reveal())
	s.hosts, _ = newHostPolicy(opts.AllowedHosts) // checked by withDefaults
	if s.hosts == nil {
		s.hosts = anyHost
	}
	if s.metrics, err = newHTTPMetrics(opts.Registerer); err != nil {
		return nil, err
	}
	if err := opts.Registerer.Register(newEngineCollector(e, cs, s.log)); err != nil {
		return nil, fmt.Errorf("server: register the engine collector: %w", err)
	}
	s.metricsHandler = promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	})
	for _, rt := range routes {
		s.mux.Handle(rt.pattern(), s.wrap(rt.pattern(), mutating(rt.method), rt.needsAuth(), rt.handle(s)))
	}
	if opts.Map != nil {
		mapped := func(w http.ResponseWriter, r *http.Request) error {
			opts.Map.ServeHTTP(w, r)
			return nil
		}
		// A GET pattern serves HEAD too.
		for _, prefix := range []string{"/map/", "/v1/map/", "/v1/worlds/{world}/tiles/", "/v1/worlds/{world}/meshes/"} {
			s.mux.Handle("GET "+prefix, s.wrap(prefix, false, false, mapped))
		}
	}
	s.mux.Handle("/", s.wrap(unmatchedRoute, false, false, s.unmatched))
	s.handler = s.mux
	return s, nil
}

// Handler returns the handler of every route.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves the API on ln until ctx ends, with timeouts t. When ctx
// ends it stops accepting, makes teleports waiting on a miss give up (503
// shutdown) and waits for the requests in flight, at most t.Shutdown
// (default DefaultShutdownTimeout); then it
// closes what is left. It returns nil after a clean stop, the listener's
// error if serving failed, or the shutdown's error if requests were still
// running at the deadline. Serve closes ln.
//
// Without an admin token, Serve logs a warning when ln is not on a
// loopback address: anyone who can reach it may use the admin routes.
// With Options.AllowedHosts empty and ln on a TCP loopback address, Serve
// answers on ln only requests for localhost, names under .localhost and
// loopback IP addresses (421 misdirected otherwise); Handler is not
// changed.
func (s *Server) Serve(ctx context.Context, ln net.Listener, t Timeouts) error {
	handler := s.handler
	if len(s.opts.AllowedHosts) == 0 && isTCPLoopback(ln.Addr()) {
		handler = s.hostGuard(loopbackHosts, handler)
	}
	if s.token.Load() == nil && !isLoopback(ln.Addr()) {
		s.log.Warn("server: listening beyond loopback without an admin token: the mutating and admin routes are open to anyone who can reach it", "addr", ln.Addr().String())
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: orDefault(t.ReadHeader, DefaultReadHeaderTimeout),
		ReadTimeout:       orDefault(t.Read, DefaultReadTimeout),
		WriteTimeout:      orDefault(t.Write, DefaultWriteTimeout),
		IdleTimeout:       orDefault(t.Idle, DefaultIdleTimeout),
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("server: listening", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		s.drainStop()
		return fmt.Errorf("server: %w", err)
	case <-ctx.Done():
	}
	s.drainStop()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), orDefault(t.Shutdown, DefaultShutdownTimeout))
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		err = errors.Join(fmt.Errorf("server: shutdown: %w", err), srv.Close())
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, fmt.Errorf("server: %w", serr))
	}
	s.log.Info("server: stopped", "addr", ln.Addr().String())
	return err
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// isLoopback reports whether addr is a loopback TCP address (or not TCP
// at all, such as a Unix socket).
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return true
	}
	return tcp.IP.IsLoopback()
}

// isTCPLoopback reports whether addr is a loopback TCP address: one a web
// browser on the same machine can reach.
func isTCPLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
