// Package cli implements the rtp command line. Run is the whole program; the
// main package only maps its error to an exit code, so every command is
// testable in-process with its own output streams.
package cli

import (
	"context"
	"errors"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Version is the program version, set at link time with
// -ldflags "-X github.com/rtpengine/rtp/cmd/rtp/cli.Version=v1.2.3".
var Version = "dev"

// ErrReported marks an error whose message was already written to stderr.
var ErrReported = errors.New("cli: error reported")

// usageError is a mistake in the command line itself (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// ExitCode maps an error returned by Run to a process exit code: 0 for nil,
// 2 for a usage mistake, 1 otherwise.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

// Run executes the command line args (without the program name), writing
// normal output to stdout and diagnostics to stderr.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil && strings.HasPrefix(err.Error(), "unknown command") {
		return usageError{err}
	}
	return err
}

// usageArgs wraps a cobra argument validator so its failures are usage errors.
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "rtp",
		Short: "rtp hands out safe, random, well-spread locations instantly",
		Long: `rtp is a random-teleport engine. It fills caches of safe landing places
ahead of demand, remembers where not to look (and for how long), and caches
the terrain it reads, for Minecraft worlds and its own procedural world.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetVersionTemplate("rtp {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(
		newVersionCmd(),
		newMemoryCmd(),
		newTerrainCmd(),
		newArchiveCmd(),
		newConfigCmd(),
		newFleetCmd(),
		newPickCmd(),
		newServeCmd(),
		newPregenCmd(),
		newStatsCmd(),
		newScanCmd(),
		newBenchCmd(),
		newMapCmd(),
	)
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the rtp version",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := io.WriteString(cmd.OutOrStdout(), "rtp "+version()+"\n")
			return err
		},
	}
}

// version returns Version when the link set it; otherwise what the build
// recorded: the module's version (go install ...@v1.2.3), else the commit
// it was built from, marked "+dirty" when the tree had changes.
func version() string {
	if Version != "dev" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Version
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return Version
	}
	return Version + " (" + rev[:min(len(rev), 12)] + dirty + ")"
}
