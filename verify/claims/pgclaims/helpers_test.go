package pgclaims_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/rtpengine/rtp/internal/eventually"
	"github.com/rtpengine/rtp/internal/pgtest"
	"github.com/rtpengine/rtp/verify/claims"
	"github.com/rtpengine/rtp/verify/claims/claimstest"
	"github.com/rtpengine/rtp/verify/claims/pgclaims"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// postgresEnv names the connection URL of the PostgreSQL server the tests
// use; they skip when it is unset.
const postgresEnv = pgtest.Env

// pgServer returns the URL of the test server, or skips the test.
func pgServer(t testing.TB) string { return pgtest.URL(t) }

var kind = claimstest.Kind{
	Name:  "postgres",
	Fresh: func(t testing.TB) string { u, _ := newSchema(t); return u },
	Open: func(ctx context.Context, at string, opts claims.Options) (*claims.Store, error) {
		return pgclaims.Open(ctx, at, pgclaims.Options{Options: opts})
	},
	Exec: pgExec,
}

func TestContract(t *testing.T) {
	pgServer(t)
	claimstest.Run(t, kind)
}

var (
	add  = claimstest.Add
	rect = claimstest.Rect
)

// newSchema creates a schema with a random name, dropped at cleanup (after
// the stores of the test are closed), and returns the server's URL with
// that schema as its search_path, and the name.
func newSchema(t testing.TB) (string, string) {
	t.Helper()
	name, u := pgtest.Schema(t)
	return u, name
}

// withSearchPath returns the URL u with its search_path set to schema.
func withSearchPath(t testing.TB, u, schema string) string {
	return pgtest.WithSearchPath(t, u, schema)
}

// pgExec runs statements on the database of u directly, as another
// program (or an administrator) would.
func pgExec(t testing.TB, u string, stmts ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatalf("connect to %s: %v", postgresEnv, err)
	}
	defer conn.Close(ctx)
	for _, q := range stmts {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// waitFor asks cond until it holds or limit passes, and returns how long
// it took and whether it held.
func waitFor(limit time.Duration, cond func() bool) (time.Duration, bool) {
	return eventually.Within(limit, cond)
}

// tcpProxy forwards connections on a loopback port to the PostgreSQL
// server, and can go down: then it cuts every connection it carries and
// closes each new one at once, as a database that went away would look.
type tcpProxy struct {
	ln      net.Listener
	target  string
	refused atomic.Int64 // connections closed at once while down

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool

	wg sync.WaitGroup
}

// startProxy starts a proxy to the server of u and returns it and u
// rewritten to go through it. The proxy stops at cleanup.
func startProxy(t testing.TB, u string) (*tcpProxy, string) {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	target := parsed.Host
	if parsed.Port() == "" {
		target = net.JoinHostPort(parsed.Hostname(), "5432")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.stop)
	parsed.Host = ln.Addr().String()
	return p, parsed.String()
}

func (p *tcpProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			p.refused.Add(1)
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// track registers c, or closes it and reports false while down.
func (p *tcpProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		c.Close()
		return false
	}
	p.conns[c] = true
	return true
}

func (p *tcpProxy) forget(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		c.Close()
	}
}

func (p *tcpProxy) serve(c net.Conn) {
	defer p.wg.Done()
	s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		p.forget(c)
		return
	}
	if !p.track(s) {
		p.forget(c)
		return
	}
	done := make(chan struct{})
	go func() {
		io.Copy(s, c)
		p.forget(c, s)
		close(done)
	}()
	io.Copy(c, s)
	p.forget(c, s)
	<-done
}

// setDown takes the proxy down (cutting every connection) or up again.
func (p *tcpProxy) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for c := range p.conns {
			c.Close()
			delete(p.conns, c)
		}
	}
}

func (p *tcpProxy) stop() {
	p.ln.Close()
	p.setDown(true)
	p.wg.Wait()
}
