package cli

import "github.com/spf13/cobra"

func newMemoryCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Inspect and simulate the spatial memory of rejected places",
	}
	return cmd
}
