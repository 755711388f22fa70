package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rtpengine/rtp/api"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/verify/claims"
)

// handlerFunc serves one route. It returns an error instead of writing
// one; it writes nothing when it returns an error.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// route is one entry of the route table.
type route struct {
	method string
	path   string // a net/http.ServeMux path pattern
	handle func(s *Server) handlerFunc
}

func (rt route) pattern() string { return rt.method + " " + rt.path }

// needsAuth reports whether the route needs the admin token (when one is
// configured): every POST, PUT and DELETE, and every /v1/admin/ route.
func (rt route) needsAuth() bool {
	return rt.method != http.MethodGet || strings.HasPrefix(rt.path, "/v1/admin/")
}

// unmatchedRoute is the metrics label of requests no route matched.
const unmatchedRoute = "unmatched"

// routes is the route table: every route of the API (api/openapi.yaml
// describes the same set; a test checks it).
var routes = []route{
	{"GET", "/v1/regions", func(s *Server) handlerFunc { return s.listRegions }},
	{"GET", "/v1/regions/{region}/stats", func(s *Server) handlerFunc { return s.stats }},
	{"POST", "/v1/regions/{region}/teleports", func(s *Server) handlerFunc { return s.teleport }},
	{"POST", "/v1/regions/{region}/group-teleports", func(s *Server) handlerFunc { return s.groupTeleport }},
	{"POST", "/v1/teleports/{id}/complete", func(s *Server) handlerFunc { return s.complete }},
	{"DELETE", "/v1/teleports/{id}", func(s *Server) handlerFunc { return s.cancel }},
	{"POST", "/v1/regions/{region}/players/{player}/join", func(s *Server) handlerFunc { return s.join }},
	{"POST", "/v1/regions/{region}/players/{player}/quit", func(s *Server) handlerFunc { return s.quit }},
	{"PUT", "/v1/regions/{region}/players/{player}/queue", func(s *Server) handlerFunc { return s.openQueue }},
	{"DELETE", "/v1/regions/{region}/players/{player}/queue", func(s *Server) handlerFunc { return s.closeQueue }},
	{"POST", "/v1/regions/{region}/network/reservations", func(s *Server) handlerFunc { return s.reserve }},
	{"POST", "/v1/regions/{region}/network/reservations/{token}/redeem", func(s *Server) handlerFunc { return s.redeem }},
	{"DELETE", "/v1/regions/{region}/network/reservations/{token}", func(s *Server) handlerFunc { return s.release }},
	{"GET", "/v1/worlds/{world}/claims", func(s *Server) handlerFunc { return s.listClaims }},
	{"POST", "/v1/worlds/{world}/claims", func(s *Server) handlerFunc { return s.addClaim }},
	{"DELETE", "/v1/worlds/{world}/claims/{id}", func(s *Server) handlerFunc { return s.removeClaim }},
	{"POST", "/v1/worlds/{world}/changes", func(s *Server) handlerFunc { return s.changes }},
	{"POST", "/v1/admin/regions/{region}/scan/reset", func(s *Server) handlerFunc { return s.scanReset }},
	{"POST", "/v1/admin/regions/{region}/scan/pause", func(s *Server) handlerFunc { return s.scanPause }},
	{"POST", "/v1/admin/regions/{region}/scan/resume", func(s *Server) handlerFunc { return s.scanResume }},
	{"GET", "/v1/admin/regions/{region}/memory", func(s *Server) handlerFunc { return s.exportMemory }},
	{"POST", "/v1/admin/reload", func(s *Server) handlerFunc { return s.reload }},
	{"GET", "/metrics", func(s *Server) handlerFunc { return s.serveMetrics }},
	{"GET", "/healthz", func(s *Server) handlerFunc { return s.healthz }},
	{"GET", "/readyz", func(s *Server) handlerFunc { return s.readyz }},
}

// wrap makes h a handler: it counts and times the request under the
// route's label, checks its Host, checks the request shape of a mutating
// route (shaped set), checks the admin token when auth is set, answers h's
// error, and recovers a panic of h as a 500.
func (s *Server) wrap(label string, shaped, auth bool, h handlerFunc) http.Handler {
	m := s.metrics.route(label)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.opts.Clock()
		sw := &statusWriter{ResponseWriter: w}
		s.metrics.inFlight.Inc()
		defer func() {
			p := recover()
			if p != nil && p != http.ErrAbortHandler {
				s.metrics.panics.Inc()
				s.log.Error("server: panic serving a request", "method", r.Method, "path", safePath(r.URL.Path), "panic", redact(r, fmt.Sprint(p)), "stack", string(debug.Stack()))
				if !sw.wrote {
					s.writeError(sw, r, &apiError{status: http.StatusInternalServerError, code: CodeInternal, msg: "internal error; the detail is in the server's log", err: fmt.Errorf("panic: %v", p)})
				}
			}
			s.metrics.inFlight.Dec()
			m.observe(sw.code(), s.opts.Clock().Sub(start))
			if p == http.ErrAbortHandler {
				panic(p)
			}
		}()
		if !s.hosts.allows(r.Host) {
			s.writeError(sw, r, misdirected())
			return
		}
		if shaped {
			if err := checkRequestShape(r); err != nil {
				s.writeError(sw, r, err)
				return
			}
		}
		if auth {
			if d := s.token.Load(); d != nil {
				if err := authorize(r, d); err != nil {
					s.writeError(sw, r, err)
					return
				}
			}
		}
		if err := h(sw, r); err != nil {
			s.writeError(sw, r, err)
		}
	})
}

// authorize checks the bearer token of r against the digest of the admin
// token. It compares SHA-256 digests in constant time, so neither the
// token's bytes nor its length show in the time taken. Its messages never
// repeat the header.
func authorize(r *http.Request, want *tokenDigest) error {
	h := r.Header.Get("Authorization")
	if h == "" {
		return &apiError{status: http.StatusUnauthorized, code: CodeUnauthorized, msg: "this route needs the admin token: Authorization: Bearer <token>"}
	}
	scheme, tok, _ := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return &apiError{status: http.StatusUnauthorized, code: CodeUnauthorized, msg: "the Authorization header is not a bearer token"}
	}
	d := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	if subtle.ConstantTimeCompare(d[:], want[:]) != 1 {
		return &apiError{status: http.StatusUnauthorized, code: CodeUnauthorized, msg: "wrong admin token"}
	}
	return nil
}

// statusWriter records the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) code() int {
	if !w.wrote {
		return http.StatusOK
	}
	return w.status
}

// unmatched answers a request no route matched: 405 with Allow when the
// path has routes for other methods, else 404. A CORS preflight (OPTIONS)
// is 405 whatever the path, with no Access-Control-Allow-* header: the
// server approves no cross-origin request. Its messages repeat the path
// through safePath.
func (s *Server) unmatched(w http.ResponseWriter, r *http.Request) error {
	path := safePath(r.URL.Path)
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, p := s.mux.Handler(probe); p != "" && p != "/" {
			allow = append(allow, m)
			if m == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
	}
	if r.Method == http.MethodOptions {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		return &apiError{status: http.StatusMethodNotAllowed, code: CodeMethodNotAllowed,
			msg: "OPTIONS is not allowed: this server answers no cross-origin (CORS) request"}
	}
	if len(allow) == 0 {
		return notFound(CodeNotFound, "no route %s %s", r.Method, path)
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	return &apiError{status: http.StatusMethodNotAllowed, code: CodeMethodNotAllowed,
		msg: fmt.Sprintf("%s is not allowed on %s; allowed: %s", r.Method, path, strings.Join(allow, ", "))}
}

// pathPlayer returns the checked {player} path segment.
func pathPlayer(r *http.Request) (string, error) {
	p := r.PathValue("player")
	if err := checkName(`path segment "player"`, p); err != nil {
		return "", err
	}
	return p, nil
}

// pathID returns the {id} path segment of a teleport.
func pathID(r *http.Request) (uint64, error) {
	v := r.PathValue("id")
	id, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, badRequest("path segment \"id\": %q is not a teleport id (an unsigned integer)", v)
	}
	return id, nil
}

func (s *Server) listRegions(w http.ResponseWriter, r *http.Request) error {
	out := api.Regions{Regions: []api.Region{}}
	for _, name := range s.e.Regions() {
		st, err := s.e.Stats(name)
		if err != nil {
			var ee *engine.Error
			if errors.As(err, &ee) && ee.Reason == engine.ReasonUnknownRegion {
				continue // gone since Regions
			}
			return err
		}
		out.Regions = append(out.Regions, api.Region{Name: name, World: st.World, Paused: st.Paused})
	}
	return s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) stats(w http.ResponseWriter, r *http.Request) error {
	st, err := s.e.Stats(r.PathValue("region"))
	if err != nil {
		return err
	}
	return s.writeJSON(w, http.StatusOK, APIStats(st))
}

// requestWait is the wait a body's waitMs asks for, or the server's
// default when it names none.
func (s *Server) requestWait(ms *int64) time.Duration {
	if ms == nil {
		return s.opts.DefaultWait
	}
	return time.Duration(*ms) * time.Millisecond
}

// waitContext returns the context a request for a place waits in. The
// engine bounds the wait (Request.Wait) and ends it at the drain
// (Request.Done), so a place served at once sets up no timer: only "do not
// wait" takes an already expired context.
func waitContext(r *http.Request, wait time.Duration) (context.Context, context.CancelFunc) {
	if wait <= 0 {
		return context.WithTimeout(r.Context(), 0)
	}
	return r.Context(), func() {}
}

// drainMiss reports whether err, from a request for a place, is a miss or
// a shutdown met while the server drains: the client is then told the
// server is shutting down.
func (s *Server) drainMiss(err error) bool {
	var ee *engine.Error
	return s.drain.Err() != nil && errors.As(err, &ee) && (ee.Reason == engine.ReasonNoLocation || ee.Reason == engine.ReasonShutdown)
}

func (s *Server) teleport(w http.ResponseWriter, r *http.Request) error {
	var b teleportBody
	if err := s.decodeBody(w, r, &b); err != nil {
		return err
	}
	wait := s.requestWait(b.WaitMs)
	ctx, cancel := waitContext(r, wait)
	defer cancel()
	req := engine.Request{Player: *b.Player, Sink: b.Sink, Token: b.Token, Wait: wait, Done: s.drain.Done(), Client: clientAddr(r)}
	loc, err := s.e.Teleport(ctx, r.PathValue("region"), req)
	if err != nil {
		if s.drainMiss(err) {
			return shuttingDown("the server is shutting down")
		}
		return err
	}
	if r.Context().Err() != nil {
		// The client went away: give the location back rather than leave
		// its reservation to its lifespan.
		if err := s.e.Cancel(loc.ID); err != nil {
			s.log.Debug("server: cancel of a teleport whose client left", "id", loc.ID, "err", err)
		}
		return nil
	}
	return s.writeJSON(w, http.StatusOK, APITeleport(loc))
}

// groupTeleport places a group: one location per player, all within the
// region's group radius (see engine.Engine.GroupTeleport). The wait is
// bounded as a teleport's.
func (s *Server) groupTeleport(w http.ResponseWriter, r *http.Request) error {
	var b groupTeleportBody
	if err := s.decodeBody(w, r, &b); err != nil {
		return err
	}
	wait := s.requestWait(b.WaitMs)
	ctx, cancel := waitContext(r, wait)
	defer cancel()
	req := engine.GroupRequest{Players: b.Players, Wait: wait, Done: s.drain.Done(), Client: clientAddr(r)}
	ps, err := s.e.GroupTeleport(ctx, r.PathValue("region"), req)
	if err != nil {
		if s.drainMiss(err) {
			return shuttingDown("the server is shutting down")
		}
		return err
	}
	if r.Context().Err() != nil {
		// The client went away: give the places back.
		for _, p := range ps {
			if err := s.e.Cancel(p.ID); err != nil {
				s.log.Debug("server: cancel of a group place whose client left", "id", p.ID, "err", err)
			}
		}
		return nil
	}
	return s.writeJSON(w, http.StatusOK, APIGroupTeleport(ps))
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if err := s.e.Complete(id); err != nil {
		return err
	}
	return noContent(w)
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if err := s.e.Cancel(id); err != nil {
		return err
	}
	return noContent(w)
}

// playerEvent serves a route that calls f with the region and player.
func (s *Server) playerEvent(w http.ResponseWriter, r *http.Request, f func(region, player string) error) error {
	player, err := pathPlayer(r)
	if err != nil {
		return err
	}
	if err := f(r.PathValue("region"), player); err != nil {
		return err
	}
	return noContent(w)
}

func (s *Server) join(w http.ResponseWriter, r *http.Request) error {
	return s.playerEvent(w, r, s.e.Join)
}

func (s *Server) quit(w http.ResponseWriter, r *http.Request) error {
	return s.playerEvent(w, r, s.e.Quit)
}

func (s *Server) openQueue(w http.ResponseWriter, r *http.Request) error {
	player, err := pathPlayer(r)
	if err != nil {
		return err
	}
	var b queueBody
	if err := s.decodeBody(w, r, &b); err != nil {
		return err
	}
	capacity := 0
	if b.Capacity != nil {
		capacity = int(*b.Capacity)
	}
	if err := s.e.OpenQueue(r.PathValue("region"), player, capacity); err != nil {
		return err
	}
	return noContent(w)
}

func (s *Server) closeQueue(w http.ResponseWriter, r *http.Request) error {
	return s.playerEvent(w, r, s.e.CloseQueue)
}

func (s *Server) reserve(w http.ResponseWriter, r *http.Request) error {
	var b reserveBody
	if err := s.decodeBody(w, r, &b); err != nil {
		return err
	}
	wait := s.requestWait(b.WaitMs)
	res, err := s.e.ReserveWait(r.Context(), r.PathValue("region"), b.Token, wait, s.drain.Done())
	if err != nil {
		if s.drainMiss(err) {
			return shuttingDown("the server is shutting down")
		}
		return err
	}
	return s.writeJSON(w, http.StatusCreated, toReservation(res))
}

func (s *Server) redeem(w http.ResponseWriter, r *http.Request) error {
	loc, err := s.e.Redeem(r.PathValue("region"), r.PathValue("token"))
	if err != nil {
		return err
	}
	return s.writeJSON(w, http.StatusOK, APITeleport(loc))
}

func (s *Server) release(w http.ResponseWriter, r *http.Request) error {
	if err := s.e.Release(r.PathValue("region"), r.PathValue("token")); err != nil {
		return err
	}
	return noContent(w)
}

// checkWorld fails with unknown-world unless a region is on world.
func (s *Server) checkWorld(world string) error {
	for _, name := range s.e.Regions() {
		st, err := s.e.Stats(name)
		if err == nil && st.World == world {
			return nil
		}
	}
	return notFound(CodeUnknownWorld, "no region is on a world %q", world)
}

func (s *Server) listClaims(w http.ResponseWriter, r *http.Request) error {
	world := r.PathValue("world")
	if err := s.checkWorld(world); err != nil {
		return err
	}
	list, err := s.claims.List(r.Context(), world)
	if err != nil {
		return err
	}
	return s.writeJSON(w, http.StatusOK, toClaims(list))
}

func (s *Server) addClaim(w http.ResponseWriter, r *http.Request) error {
	world := r.PathValue("world")
	var b claimBody
	if err := s.decodeBody(w, r, &b); err != nil {
		return err
	}
	if err := s.checkWorld(world); err != nil {
		return err
	}
	c, err := s.claims.Add(r.Context(), claims.Claim{World: world, Owner: *b.Owner, MinX: *b.MinX, MinZ: *b.MinZ, MaxX: *b.MaxX, MaxZ: *b.MaxZ})
	if err != nil {
		if errors.Is(err, claims.ErrInvalidClaim) {
			return &apiError{status: http.StatusBadRequest, code: engine.ReasonInvalid, msg: oneLine(err.Error())}
		}
		return err
	}
	w.Header().Set("Location", "/v1/worlds/"+url.PathEscape(world)+"/claims/"+strconv.FormatInt(c.ID, 10))
	return s.writeJSON(w, http.StatusCreated, toClaim(c))
}

func (s *Server) removeClaim(w http.ResponseWriter, r *http.Request) error {
	world := r.PathValue("world")
	v := r.PathValue("id")
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		return badRequest("path segment \"id\": %q is not a claim id (a positive integer)", v)
	}
	if err := s.checkWorld(world); err != nil {
		return err
	}
	store := s.claims
	list, err := store.List(r.Context(), world)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(list, func(c claims.Claim) bool { return c.ID == id }) {
		return notFound(CodeUnknownClaim, "world %q has no claim %d", world, id)
	}
	ok, err := store.Remove(r.Context(), id)
	if err != nil {
		return err
	}
	if !ok { // removed meanwhile
		return notFound(CodeUnknownClaim, "world %q has no claim %d", world, id)
	}
	return noContent(w)
}

func (s *Server) scanReset(w http.ResponseWriter, r *http.Request) error {
	if err := s.e.ScanReset(r.Context(), r.PathValue("region")); err != nil {
		return err
	}
	return noContent(w)
}

func (s *Server) scanPause(w http.ResponseWriter, r *http.Request) error {
	if err := s.e.ScanPause(r.PathValue("region")); err != nil {
		return err
	}
	return noContent(w)
}

func (s *Server) scanResume(w http.ResponseWriter, r *http.Request) error {
	if err := s.e.ScanResume(r.PathValue("region")); err != nil {
		return err
	}
	return noContent(w)
}

func (s *Server) exportMemory(w http.ResponseWriter, r *http.Request) error {
	var buf bytes.Buffer
	if err := s.e.ExportMemory(r.PathValue("region"), &buf); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	_, _ = buf.WriteTo(w)
	return nil
}

func (s *Server) reload(w http.ResponseWriter, r *http.Request) error {
	if s.opts.Reload == nil {
		return &apiError{status: http.StatusConflict, code: engine.ReasonRestartNeeded,
			msg: "this server has no configuration file to reload; restart it to change its configuration"}
	}
	if err := s.Reload(r.Context()); err != nil {
		return err
	}
	return noContent(w)
}

// Reload applies what an operator changed while the server runs: the
// configuration file through Options.Reload, when set, then the admin token
// through Options.ReloadToken, when set. It backs POST /v1/admin/reload and
// the command's SIGHUP. When the configuration cannot be applied, nothing
// changes and its error is returned; when the token cannot be read again,
// the old token stays in force and the error says so (without the token).
// Reload is safe for concurrent use.
func (s *Server) Reload(ctx context.Context) error {
	if s.opts.Reload != nil {
		if err := s.opts.Reload(ctx); err != nil {
			return err
		}
	}
	if s.opts.ReloadToken != nil {
		tok, err := s.opts.ReloadToken()
		if err != nil {
			return &apiError{status: http.StatusInternalServerError, code: CodeInternal,
				msg: "the configuration was reloaded, but the admin token could not be read again: the previous token stays in force; the detail is in the server's log",
				err: fmt.Errorf("reload the admin token: %w", err)}
		}
		s.applyToken(tok)
	}
	return nil
}

// applyToken installs a token read again by a reload, logging (without
// the token) whether it changed.
func (s *Server) applyToken(tok string) {
	old := s.token.Load()
	s.SetToken(tok)
	cur := s.token.Load()
	switch {
	case old != nil && cur == nil:
		s.log.Warn("server: the reload removed the admin token: the mutating and admin routes are open")
	case old == nil && cur != nil:
		s.log.Info("server: the reload set an admin token")
	case old != nil && *old != *cur:
		s.log.Info("server: the reload replaced the admin token")
	}
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	s.metricsHandler.ServeHTTP(w, r)
	return nil
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	return s.writeJSON(w, http.StatusOK, api.Status{Status: "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	if err := s.e.Ready(); err != nil {
		return &apiError{status: http.StatusServiceUnavailable, code: CodeNotReady, msg: oneLine(err.Error()), retryAfter: retryNotReady}
	}
	st := api.Status{Status: "ready"}
	if x, ok := s.e.(interface{ Exhausted() []string }); ok {
		st.Exhausted = x.Exhausted()
	}
	if x, ok := s.e.(interface{ Warnings() []string }); ok {
		st.Warnings = x.Warnings()
	}
	return s.writeJSON(w, http.StatusOK, st)
}
