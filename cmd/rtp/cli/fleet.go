package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/pipeline/pgpersist"
)

func newFleetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Inspect the nodes sharing one PostgreSQL database",
		Long: `A fleet is several rtp serve processes (nodes) sharing one PostgreSQL
database (database.kind postgres in the configuration; see docs/fleet.md).`,
	}
	cmd.AddCommand(newFleetStatusCmd())
	return cmd
}

// statusTimeout bounds rtp fleet status's reading of the database.
const statusTimeout = 10 * time.Second

func newFleetStatusCmd() *cobra.Command {
	var configPath string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status --config FILE",
		Short: "List the nodes of the fleet's database",
		Long: `Status reads the nodes table of the fleet's database (database.url of the
configuration, or RTP_DATABASE_URL) and lists every node that has ever
joined: its name; its state (running, clean: stopped in order, lapsed: its
lease ran out and its claims went back to the pool); whether it is live
(running with a lease that has not lapsed); how long ago its last heartbeat
was and when its lease ends, on the database's clock; its run (each start
adds one); the software version it reported; the regions it serves; and the
location rows it owns, with how many of them are hot (held ready to hand
out).

It only reads: it neither creates nor migrates the tables, and it joins no
fleet. A database no node has opened yet prints "no nodes yet". --json
prints the same as one JSON object.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configPath == "" {
				return usageError{errors.New("fleet status: --config is required")}
			}
			return runFleetStatus(cmd.Context(), configPath, asJSON, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "configuration file naming the fleet's database (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the nodes as JSON")
	return cmd
}

func runFleetStatus(ctx context.Context, path string, asJSON bool, stdout, stderr io.Writer) error {
	c, err := config.LoadFile(path)
	if err != nil {
		return reportConfigProblems(stderr, err)
	}
	u, from := c.Database.ConnURL()
	if u == "" {
		return fmt.Errorf("fleet status: %s names no fleet database: database.kind is %s (want postgres)", path, c.Database.Kind)
	}
	label := configService{name: "database", url: u, from: from}.label()
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	nodes, err := pgpersist.ListNodes(ctx, u.Reveal(), "")
	if err != nil {
		return fmt.Errorf("fleet status: %s: %s", label, scrubPassword(err.Error(), u.Reveal()))
	}
	if asJSON {
		return writeFleetJSON(stdout, nodes)
	}
	return writeFleetTable(stdout, nodes)
}

// fleetNodeJSON is a node as --json prints it.
type fleetNodeJSON struct {
	Name                string   `json:"name"`
	State               string   `json:"state"`
	Live                bool     `json:"live"`
	Run                 int64    `json:"run"`
	Software            string   `json:"software"`
	Regions             []string `json:"regions"`
	Started             string   `json:"started"`
	Heartbeat           string   `json:"heartbeat"`
	HeartbeatAgeSeconds float64  `json:"heartbeatAgeSeconds"`
	Expires             string   `json:"expires"`
	ExpiresInSeconds    float64  `json:"expiresInSeconds"`
	Owned               int64    `json:"owned"`
	Hot                 int64    `json:"hot"`
}

func writeFleetJSON(w io.Writer, nodes []pgpersist.NodeInfo) error {
	out := struct {
		Nodes []fleetNodeJSON `json:"nodes"`
	}{Nodes: make([]fleetNodeJSON, 0, len(nodes))}
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	seconds := func(d time.Duration) float64 { return d.Round(time.Millisecond).Seconds() }
	for _, n := range nodes {
		out.Nodes = append(out.Nodes, fleetNodeJSON{
			Name: n.Name, State: n.State, Live: n.Live, Run: n.Version, Software: n.Software, Regions: n.Regions,
			Started: stamp(n.Started), Heartbeat: stamp(n.Heartbeat), HeartbeatAgeSeconds: seconds(n.HeartbeatAge()),
			Expires: stamp(n.Expires), ExpiresInSeconds: seconds(n.ExpiresIn()), Owned: n.Owned, Hot: n.Hot,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func writeFleetTable(w io.Writer, nodes []pgpersist.NodeInfo) error {
	if len(nodes) == 0 {
		_, err := io.WriteString(w, "no nodes yet\n")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tLIVE\tHEARTBEAT\tLEASE\tRUN\tSOFTWARE\tREGIONS\tROWS\tHOT")
	live := 0
	for _, n := range nodes {
		yes := "no"
		if n.Live {
			yes = "yes"
			live++
		}
		lease := "ended " + ago(-n.ExpiresIn())
		if n.ExpiresIn() > 0 {
			lease = "ends in " + shortDuration(n.ExpiresIn())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t%d\n", n.Name, n.State, yes, ago(n.HeartbeatAge()), lease,
			n.Version, orDash(n.Software), orDash(strings.Join(n.Regions, ",")), n.Owned, n.Hot)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s, %d live\n", pluralize(len(nodes), "node"), live)
	return err
}

// ago writes a past duration: "3s ago".
func ago(d time.Duration) string { return shortDuration(d) + " ago" }

// shortDuration writes d rounded to what a person reads: "850ms", "14s",
// "5m3s", "2h5m", "3d4h".
func shortDuration(d time.Duration) string {
	switch d = max(d, 0); {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	}
	days := d / (24 * time.Hour)
	return fmt.Sprintf("%dd%dh", days, (d-days*24*time.Hour)/time.Hour)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
