package main_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rtpengine/rtp/client"
	"github.com/rtpengine/rtp/internal/eventually"
)

// TestNetworkTokensSurviveKill builds rtp and runs rtp serve with a
// network sink, then checks that a token is single-use across a SIGKILL
// and a SIGTERM of the server, restarted each time on the same data
// folder: a token redeemed before is refused as redeemed after (409
// token-redeemed, for a redeem and for a reservation, never 404 and a new
// place), and a token reserved before is redeemed after, at the place
// reserved, once.
func TestNetworkTokensSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rtp and runs it; skipped with -short")
	}
	bin := buildRTP(t)
	dataDir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "rtp.yml")
	if err := os.WriteFile(cfg, []byte(`data_dir: `+dataDir+`
server:
  listen: 127.0.0.1:0
regions:
  default:
    world: world
    shape: {kind: circle, radius: 512}
    sinks:
      general: {capacity: 4}
      network: {enabled: true, capacity: 4, lease: 1m}
    pulse: 10ms
    queues: {backlog: 32, cold: 32}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var addr string // the running server's
	start := func() (*server, *client.Client) {
		srv := startServer(t, bin, cfg)
		addr = srv.addr
		c := client.New(srv.addr, client.Options{})
		waitServerReady(t, c)
		return srv, c
	}
	// reserve reserves a place for token ("" mints one), waiting for the
	// network sink to have one ready.
	reserve := func(c *client.Client, token string) client.Reservation {
		t.Helper()
		var (
			r   client.Reservation
			err error
		)
		if _, ok := eventually.Within(60*time.Second, func() bool {
			r, err = c.Reserve(t.Context(), "default", token)
			return err == nil || client.Code(err) != client.CodeNoLocation
		}); !ok || err != nil {
			t.Fatalf("Reserve: %v", err)
		}
		return r
	}
	redeemed := func(c *client.Client, what, token string) {
		t.Helper()
		tp, err := c.Redeem(t.Context(), "default", token)
		var ae *client.APIError
		if !errors.As(err, &ae) || ae.Status != 409 || ae.Code != client.CodeTokenRedeemed {
			t.Errorf("%s: Redeem = %+v, %v; want 409 %s", what, tp, err, client.CodeTokenRedeemed)
		}
		r, err := c.Reserve(t.Context(), "default", token)
		if !errors.As(err, &ae) || ae.Status != 409 || ae.Code != client.CodeTokenRedeemed {
			t.Errorf("%s: Reserve = %+v, %v; want 409 %s", what, r, err, client.CodeTokenRedeemed)
		}
	}
	redeem := func(c *client.Client, what string, r client.Reservation) {
		t.Helper()
		tp, err := c.Redeem(t.Context(), "default", r.Token)
		if err != nil {
			t.Fatalf("%s: Redeem = %v", what, err)
		}
		if got, want := fmt.Sprint(tp.World, tp.X, tp.Y, tp.Z), fmt.Sprint(r.Location.World, r.Location.X, r.Location.Y, r.Location.Z); got != want {
			t.Errorf("%s: Redeem handed out %s, want the place reserved, %s", what, got, want)
		}
		complete(addr, tp.ID)
	}

	srv, c := start()
	used := reserve(c, "")
	kept := reserve(c, "")
	redeem(c, "before the kill", used)
	redeemed(c, "before the kill", used.Token)
	srv.kill() // SIGKILL

	srv, c = start()
	if unclean, _ := srv.recovery(t); !unclean {
		t.Errorf("the restart after a SIGKILL is not reported unclean\n%s", srv.logText())
	}
	redeemed(c, "after the kill", used.Token)
	redeem(c, "reserved before the kill", kept)
	redeemed(c, "reserved before the kill, redeemed after", kept.Token)
	third := reserve(c, "")

	// SIGTERM: a clean shutdown keeps the leases too.
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv.cmd.Wait(); err != nil {
		t.Fatalf("rtp serve after SIGTERM: %v\n%s", err, srv.logText())
	}
	_, c = start()
	redeemed(c, "after the kill and a SIGTERM", used.Token)
	redeemed(c, "after a SIGTERM", kept.Token)
	redeem(c, "reserved before a SIGTERM", third)
	redeemed(c, "reserved before a SIGTERM, redeemed after", third.Token)
}
