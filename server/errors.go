package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rtpengine/rtp/api"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/verify/claims"
)

// Error codes of the API that are not engine reasons. The others equal the
// engine.Reason* constants (see the package documentation).
const (
	CodeBadRequest       = "bad-request"
	CodeUnauthorized     = "unauthorized"
	CodeTooLarge         = "too-large"
	CodeUnknownWorld     = "unknown-world"
	CodeUnknownClaim     = "unknown-claim"
	CodeNotFound         = "not-found"
	CodeMethodNotAllowed = "method-not-allowed"
	CodeNotReady         = "not-ready"
	CodeInternal         = "internal"

	// CodeUnsupportedMediaType (415): a mutating request with neither
	// Content-Type application/json nor the X-RTP-Request header, or a
	// body that is not declared JSON.
	CodeUnsupportedMediaType = "unsupported-media-type"
	// CodeMisdirected (421): a request for a host name the server does not
	// answer (Options.AllowedHosts).
	CodeMisdirected = "misdirected"
)

// Retry-After values of the 503 answers, in seconds.
const (
	retryNoLocation = 1 // the next pulse is milliseconds away
	retryPaused     = 5 // an operator has to resume the scan
	retryShutdown   = 5 // the server is restarting or going away
	retryNotReady   = 1
	// retryTooManyOpen: handouts close as players complete, cancel or
	// reach their lifespan.
	retryTooManyOpen = 1
	// retryLeases: the lease store of a fleet reconnects on its own.
	retryLeases = 1
	// retryExhausted: a region with no safe place left recovers when the
	// world changes or its memory's rejections expire (minutes).
	retryExhausted = 30
)

// status is the HTTP status and Retry-After of an engine reason.
type status struct {
	code       int
	retryAfter int
}

// reasonStatus maps every engine.Reason* to its answer.
var reasonStatus = map[string]status{
	engine.ReasonUnknownRegion: {http.StatusNotFound, 0},
	engine.ReasonUnknownWorld:  {http.StatusNotFound, 0},
	engine.ReasonNotWatched:    {http.StatusConflict, 0},
	engine.ReasonUnknownID:     {http.StatusNotFound, 0},
	engine.ReasonUnknownToken:  {http.StatusNotFound, 0},
	engine.ReasonUnknownSink:   {http.StatusBadRequest, 0},
	engine.ReasonInvalid:       {http.StatusBadRequest, 0},
	engine.ReasonGroupTooLarge: {http.StatusBadRequest, 0},
	engine.ReasonInvalidToken:  {http.StatusBadRequest, 0},
	engine.ReasonNoSink:        {http.StatusConflict, 0},
	engine.ReasonRedeemed:      {http.StatusConflict, 0},
	engine.ReasonRestartNeeded: {http.StatusConflict, 0},
	engine.ReasonLeaseExpired:  {http.StatusGone, 0},
	engine.ReasonNoLocation:    {http.StatusServiceUnavailable, retryNoLocation},
	engine.ReasonPaused:        {http.StatusServiceUnavailable, retryPaused},
	engine.ReasonShutdown:      {http.StatusServiceUnavailable, retryShutdown},
	engine.ReasonTooManyOpen:   {http.StatusServiceUnavailable, retryTooManyOpen},
	engine.ReasonExhausted:     {http.StatusServiceUnavailable, retryExhausted},
	// A fleet's lease store is away: the answer is unknown, not refused.
	engine.ReasonLeasesUnavailable: {http.StatusServiceUnavailable, retryLeases},
}

// apiError is an answer other than 2xx: the body {"error": {"code",
// "message"}} with its status. err, when set, is the detail logged for a
// 500 instead of being shown.
type apiError struct {
	status     int
	code       string
	msg        string
	retryAfter int // seconds, for 503
	err        error
}

func (e *apiError) Error() string { return e.code + ": " + e.msg }

// Unwrap returns the logged detail, so that a caller outside HTTP (the
// command's SIGHUP) can log it.
func (e *apiError) Unwrap() error { return e.err }

func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: CodeBadRequest, msg: fmt.Sprintf(format, args...)}
}

func notFound(code, format string, args ...any) *apiError {
	return &apiError{status: http.StatusNotFound, code: code, msg: fmt.Sprintf(format, args...)}
}

func shuttingDown(msg string) *apiError {
	return &apiError{status: http.StatusServiceUnavailable, code: engine.ReasonShutdown, msg: msg, retryAfter: retryShutdown}
}

// toAPIError maps an error of a handler to its answer: an *apiError as it
// is, an *engine.Error by its Reason, a closed claims store as shutdown,
// anything else as a 500 whose detail is kept for the log.
func toAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var ee *engine.Error
	if errors.As(err, &ee) {
		if st, ok := reasonStatus[ee.Reason]; ok {
			msg := strings.TrimPrefix(ee.Error(), "engine: ")
			retry := st.retryAfter
			if ee.RetryAfter > 0 {
				// Whole seconds, rounded up: never earlier than the engine said.
				retry = int((ee.RetryAfter + time.Second - 1) / time.Second)
			}
			return &apiError{status: st.code, code: ee.Reason, msg: oneLine(msg), retryAfter: retry}
		}
	}
	if errors.Is(err, claims.ErrClosed) {
		return shuttingDown("the claims store is closed: the server is shutting down")
	}
	return &apiError{status: http.StatusInternalServerError, code: CodeInternal, msg: "internal error; the detail is in the server's log", err: err}
}

// oneLine joins the lines of a message (errors.Join separates with
// newlines) with "; ".
func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}

// writeError answers r with err (see toAPIError), logging the detail of a
// 500.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := toAPIError(err)
	if ae.status >= 500 && ae.status != http.StatusServiceUnavailable {
		detail := "<nil>"
		if ae.err != nil {
			detail = redact(r, ae.err.Error())
		}
		s.log.Error("server: request failed", "method", r.Method, "path", safePath(r.URL.Path), "err", detail)
	}
	h := w.Header()
	switch ae.status {
	case http.StatusServiceUnavailable:
		ra := ae.retryAfter
		if ra < 1 {
			ra = 1
		}
		h.Set("Retry-After", strconv.Itoa(ra))
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Bearer realm="rtp"`)
	}
	s.writeJSON(w, ae.status, api.Error{Error: api.ErrorDetail{Code: ae.code, Message: ae.msg}})
}
