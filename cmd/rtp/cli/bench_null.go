package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"runtime/trace"
	"time"

	"github.com/spf13/cobra"

	"github.com/rtpengine/rtp/loadgen"
	"github.com/rtpengine/rtp/server"
)

const defaultNullListen = "127.0.0.1:8081"

func newBenchNullServerCmd() *cobra.Command {
	var listen, tracePath string
	var tileBytes, residentMiB int
	cmd := &cobra.Command{
		Use:   "null-server",
		Short: "Serve canned teleport answers, to measure the machine's floor",
		Long: `Null-server answers the requests bench http sends (teleports, completions,
joins, quits, health checks, map tiles) at once with valid canned answers,
doing no work behind them, until it is interrupted. Bench http against it measures
what the machine, its loopback and the generator add to every request: the
floor under rtp serve's figures on the same machine.

  rtp bench null-server --listen 127.0.0.1:8081 &
  rtp bench http --addr 127.0.0.1:8081 --rate 1000 --duration 30s --complete

With --resident MIB it first allocates that much memory, writes every
page of it once and holds it until it stops, doing nothing else with it:
a diagnostic for hosts that charge a process for the memory it keeps
resident (a hypervisor's shadow page tables, a kernel memory monitor
sampling page access bits). Compared with a run without it, it shows how
much of rtp serve's gap to the floor is its resident set rather than its
work. It is not the floor: compare rtp serve with the plain null server.

On start it prints "listening on http://ADDR" (the address actually bound).`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runNullServer(cmd.Context(), cmd, listen, tileBytes, residentMiB, tracePath)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", defaultNullListen, "address to listen on, host:port (port 0: any free port)")
	cmd.Flags().StringVar(&tracePath, "trace", "", "write an execution trace of the whole run to this file, as rtp serve --trace does (to compare the two)")
	cmd.Flags().IntVar(&tileBytes, "tile-bytes", loadgen.DefaultNullTileBytes, "size of the body a map tile request gets (match a real tile's)")
	cmd.Flags().IntVar(&residentMiB, "resident", 0, "MiB of memory to allocate, touch once and hold while serving (a diagnostic of what the host charges for resident memory; 0: none)")
	return cmd
}

// maxResidentMiB bounds null-server --resident.
const maxResidentMiB = 16 << 10

// holdResident allocates mib MiB in blocks of a MiB and writes every page
// of them once, so that the memory is resident, not merely reserved.
// The blocks hold no pointers: the garbage collector never scans them.
func holdResident(mib int) [][]byte {
	const block, page = 1 << 20, 4 << 10
	held := make([][]byte, mib)
	for i := range held {
		b := make([]byte, block)
		for j := 0; j < len(b); j += page {
			b[j] = 1
		}
		held[i] = b
	}
	return held
}

func runNullServer(ctx context.Context, cmd *cobra.Command, listen string, tileBytes, residentMiB int, tracePath string) (err error) {
	if tileBytes < 1 || tileBytes > 64<<20 {
		return usageError{fmt.Errorf("bench null-server: --tile-bytes %d outside [1, %d]", tileBytes, 64<<20)}
	}
	if residentMiB < 0 || residentMiB > maxResidentMiB {
		return usageError{fmt.Errorf("bench null-server: --resident %d outside [0, %d] MiB", residentMiB, maxResidentMiB)}
	}
	held := holdResident(residentMiB)
	defer runtime.KeepAlive(held)
	if tracePath != "" {
		stop, err := startRecording("--trace", tracePath, trace.Start, trace.Stop)
		if err != nil {
			return fmt.Errorf("bench null-server: %w", err)
		}
		defer func() {
			if serr := stop(); serr != nil && err == nil {
				err = fmt.Errorf("bench null-server: --trace: %w", serr)
			}
		}()
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("bench null-server: %w", err)
	}
	srv := &http.Server{
		Handler:           loadgen.NullHandlerWith(loadgen.NullOptions{TileBytes: tileBytes}),
		ReadHeaderTimeout: server.DefaultReadHeaderTimeout,
		ReadTimeout:       server.DefaultReadTimeout,
		WriteTimeout:      server.DefaultWriteTimeout,
		IdleTimeout:       server.DefaultIdleTimeout,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(cmd.OutOrStdout(), "listening on http://%s\n", ln.Addr())
	select {
	case err := <-errc:
		return fmt.Errorf("bench null-server: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("bench null-server: shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("bench null-server: %w", err)
	}
	return nil
}
