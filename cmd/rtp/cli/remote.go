package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/rtpengine/rtp/client"
)

// Environment variables the commands that talk to a server read.
const (
	envAddr  = "RTP_ADDR"
	envToken = "RTP_TOKEN"
	// defaultAddr is the server rtp serve listens on by default.
	defaultAddr = "http://127.0.0.1:8080"
)

// remoteFlags are the flags of a command that talks to a running server.
type remoteFlags struct {
	addr    string
	token   string
	timeout time.Duration
}

func (r *remoteFlags) register(f *pflag.FlagSet) {
	f.StringVar(&r.addr, "addr", "", "server URL or host:port (default $"+envAddr+", or "+defaultAddr+")")
	f.StringVar(&r.token, "token", "", "admin token (default $"+envToken+")")
	f.DurationVar(&r.timeout, "timeout", 30*time.Second, "give up after this long")
}

// baseURL returns the server URL: the flag, the environment or the default;
// a bare host:port gets http://.
func (r *remoteFlags) baseURL() string {
	addr := r.addr
	if addr == "" {
		addr = os.Getenv(envAddr)
	}
	if addr == "" {
		addr = defaultAddr
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	return addr
}

func (r *remoteFlags) tokenValue() string {
	if r.token != "" {
		return r.token
	}
	return strings.TrimSpace(os.Getenv(envToken))
}

// client returns a client of the server; a bad address is a usage error.
func (r *remoteFlags) client() (*client.Client, error) {
	c := client.New(r.baseURL(), client.Options{Token: r.tokenValue(), UserAgent: "rtp/" + Version})
	if err := c.Err(); err != nil {
		return nil, usageError{fmt.Errorf("--addr: %w", err)}
	}
	return c, nil
}
