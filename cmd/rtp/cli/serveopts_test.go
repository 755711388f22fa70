package cli

import (
	"testing"
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/server"
)

// TestServerSection: the configuration's server section maps field by
// field onto the server's timeouts, and its defaults are the server's
// own (package config cannot name them).
func TestServerSection(t *testing.T) {
	got := serverTimeouts(config.Default().Server)
	want := server.Timeouts{
		ReadHeader: server.DefaultReadHeaderTimeout,
		Read:       server.DefaultReadTimeout,
		Write:      server.DefaultWriteTimeout,
		Idle:       server.DefaultIdleTimeout,
		Shutdown:   server.DefaultShutdownTimeout,
	}
	if got != want {
		t.Errorf("serverTimeouts(default section) = %+v, want the server's defaults %+v", got, want)
	}
	if config.DefaultMaxBodyBytes != server.DefaultMaxBodyBytes {
		t.Errorf("config.DefaultMaxBodyBytes = %d, server.DefaultMaxBodyBytes = %d", config.DefaultMaxBodyBytes, server.DefaultMaxBodyBytes)
	}
	s := config.Server{ReadHeaderTimeout: 1 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 3 * time.Second,
		IdleTimeout: 4 * time.Second, ShutdownTimeout: 5 * time.Second}
	want = server.Timeouts{ReadHeader: 1 * time.Second, Read: 2 * time.Second, Write: 3 * time.Second, Idle: 4 * time.Second, Shutdown: 5 * time.Second}
	if got := serverTimeouts(s); got != want {
		t.Errorf("serverTimeouts(%+v) = %+v, want %+v", s, got, want)
	}
}
