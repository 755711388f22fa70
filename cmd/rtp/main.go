// Command rtp is the random-teleport engine's command-line interface: it
// serves safe random locations, inspects and simulates spatial memory, and
// manages the terrain caches. All commands live in package cli.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/rtpengine/rtp/cmd/rtp/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first signal starts an orderly shutdown; a second one ends the
	// process at once.
	go func() {
		<-ctx.Done()
		stop()
	}()
	err := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, cli.ErrReported) {
			fmt.Fprintln(os.Stderr, "rtp:", err)
		}
		os.Exit(cli.ExitCode(err))
	}
}
