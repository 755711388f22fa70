package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rtpengine/rtp/client"
)

func newScanCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scan",
		Short: "Reset, pause or resume a region's scan on a running server",
	}
	type op struct {
		name, short string
		call        func(*client.Client, context.Context, string) error
		done        string
	}
	for _, o := range []op{
		{"reset", "Forget a region's spatial memory and cached locations and scan afresh", (*client.Client).ScanReset, "reset"},
		{"pause", "Stop a region's background scan (ready locations are still served)", (*client.Client).ScanPause, "paused"},
		{"resume", "Resume a paused region's scan", (*client.Client).ScanResume, "resumed"},
	} {
		var (
			rf     remoteFlags
			region string
		)
		sub := &cobra.Command{
			Use:   o.name + " --region R",
			Short: o.short,
			Args:  usageArgs(cobra.NoArgs),
			RunE: func(cmd *cobra.Command, _ []string) error {
				if region == "" {
					return usageError{errors.New("scan " + o.name + ": --region is required")}
				}
				c, err := rf.client()
				if err != nil {
					return err
				}
				ctx, cancel := context.WithTimeout(cmd.Context(), rf.timeout)
				defer cancel()
				if err := o.call(c, ctx, region); err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "region %s: scan %s\n", region, o.done)
				return err
			},
		}
		rf.register(sub.Flags())
		sub.Flags().StringVar(&region, "region", "", "region (required)")
		cmd.AddCommand(sub)
	}
	return cmd
}
