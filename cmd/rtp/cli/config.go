package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/ttl"
)

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check configuration files",
		Long: `rtp reads one YAML configuration file (every option is documented, with its
default, in config/rtp.example.yml) plus the ttl.yml it names.`,
	}
	cmd.AddCommand(newConfigCheckCmd())
	return cmd
}

func newConfigCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check FILE",
		Short: "Report every problem of a config file at once",
		Long: `Check loads FILE as rtp serve would and reports every problem at once, one
per line, as "file:line: key.path: message", then exits 1. Besides the file
itself it reads what the file names: the ttl.yml (a missing one means the
defaults), the admin token file and the network secret files, and it builds
every region's shape. A Minecraft world's path must be an existing directory.

A file that passes prints "ok" and a one-line summary of its worlds, regions
and verifiers.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := config.CheckFile(args[0])
			if err != nil {
				return reportConfigProblems(cmd.ErrOrStderr(), err)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "ok\n%s\n", configSummary(c))
			return err
		},
	}
}

// reportConfigProblems writes the problems of a config file to w, one a line,
// and returns an error marked as reported; any other error (the file
// cannot be read) is returned for the caller to print.
func reportConfigProblems(w io.Writer, err error) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var le *config.LineError
		var te *ttl.LineError
		if !errors.As(e, &le) && !errors.As(e, &te) {
			return err
		}
	}
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.Error())
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "%s\n", pluralize(len(errs), "problem"))
	if _, werr := io.WriteString(w, b.String()); werr != nil {
		return werr
	}
	return fmt.Errorf("config: %s: %w", pluralize(len(errs), "problem"), ErrReported)
}

// configSummary describes a config in one line: "1 world (world), 1 region
// (default), 0 verifiers".
func configSummary(c *config.Config) string {
	names := func(keys []string) string {
		if len(keys) == 0 {
			return ""
		}
		return " (" + strings.Join(keys, ", ") + ")"
	}
	worlds := configNames(c.Worlds)
	regions := configNames(c.Regions)
	var verifiers []string
	for _, v := range c.Verifiers {
		verifiers = append(verifiers, v.Name)
	}
	return fmt.Sprintf("%s%s, %s%s, %s%s",
		pluralize(len(worlds), "world"), names(worlds),
		pluralize(len(regions), "region"), names(regions),
		pluralize(len(verifiers), "verifier"), names(verifiers))
}

func configNames[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func pluralize(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
