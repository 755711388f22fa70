package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/internal/lineerr"
	"github.com/rtpengine/rtp/pipeline/pgpersist"
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
	var connect bool
	cmd := &cobra.Command{
		Use:   "check FILE",
		Short: "Report every problem of a config file at once",
		Long: `Check loads FILE as rtp serve would and reports every problem at once, one
per line, as "file:line: key.path: message", then exits 1. Besides the file
itself it reads what the file names: the ttl.yml (a missing one means the
defaults), the admin token file and the network secret files, and it builds
every region's shape. A Minecraft world's path must be an existing directory.
Service URLs (database.url, archive.url, leases.url, or the environment
variables RTP_DATABASE_URL, RTP_ARCHIVE_URL and RTP_LEASES_URL when the file
gives none) must parse; they are printed with their password masked.

A file that passes prints "ok" and a one-line summary of its worlds, regions
and verifiers, and a line naming the shared services when it has any.

With --connect it then connects to each service the file names (at most 5s
each) and says what it found: for PostgreSQL the server version, the
database, the user and the version of rtp's tables (or that they are not
yet created); for Redis the server version and the database number. A
service that cannot be reached is reported on stderr, with the error, and
the command exits 1.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := config.CheckFile(args[0])
			if err != nil {
				return reportConfigProblems(cmd.ErrOrStderr(), err)
			}
			out := cmd.OutOrStdout()
			text := "ok\n" + configSummary(c) + "\n"
			if line := servicesSummary(c); line != "" {
				text += line + "\n"
			}
			if _, err := io.WriteString(out, text); err != nil {
				return err
			}
			if !connect {
				return nil
			}
			return connectServices(cmd.Context(), c, out, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&connect, "connect", false, "also connect to the database, archive and leases servers the file names")
	return cmd
}

// connectTimeout bounds the check of one service.
const connectTimeout = 5 * time.Second

// configService is a server a configuration names.
type configService struct {
	name string // database, archive or leases
	kind string // postgres or redis
	url  config.ServiceURL
	from string // the environment variable the URL came from, or ""
}

// label names the service and its URL, password masked: "database
// postgres://rtp:xxxxx@db/rtp" (from RTP_DATABASE_URL).
func (s configService) label() string {
	l := s.name + " " + s.url.String()
	if s.from != "" {
		l += " (from " + s.from + ")"
	}
	return l
}

// configServices returns the servers c names, in the order database,
// archive, leases.
func configServices(c *config.Config) []configService {
	var out []configService
	if u, from := c.Database.ConnURL(); u != "" {
		out = append(out, configService{"database", config.KindPostgres, u, from})
	}
	if u, from := c.Archive.ConnURL(); u != "" {
		out = append(out, configService{"archive", config.KindPostgres, u, from})
	}
	if u, from := c.Leases.ConnURL(); u != "" {
		out = append(out, configService{"leases", config.KindRedis, u, from})
	}
	return out
}

// servicesSummary names the shared services of c, "" when it has none.
func servicesSummary(c *config.Config) string {
	ss := configServices(c)
	if len(ss) == 0 {
		return ""
	}
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = s.label()
	}
	return "shared: " + strings.Join(parts, ", ")
}

// connectServices connects to every service of c, one after the other,
// writing what each holds to out and each failure to errOut. It returns
// an error marked as reported when one failed.
func connectServices(ctx context.Context, c *config.Config, out, errOut io.Writer) error {
	ss := configServices(c)
	if len(ss) == 0 {
		_, err := io.WriteString(out, "nothing needs connecting: the database, the archive and the leases are all local\n")
		return err
	}
	failed := 0
	for _, s := range ss {
		sctx, cancel := context.WithTimeout(ctx, connectTimeout)
		var found string
		var err error
		switch {
		case s.kind == config.KindRedis:
			found, err = probeRedis(sctx, s.url.Reveal())
		default:
			archiveSchema := ""
			if s.name == "archive" {
				archiveSchema = c.Archive.Schema
				if archiveSchema == "" {
					archiveSchema = config.DefaultArchiveSchema
				}
			}
			found, err = probePostgres(sctx, s.url.Reveal(), archiveSchema)
		}
		cancel()
		if err != nil {
			failed++
			msg := scrubPassword(err.Error(), s.url.Reveal())
			if _, werr := fmt.Fprintf(errOut, "%s: failed: %s\n", s.label(), msg); werr != nil {
				return werr
			}
			continue
		}
		if _, err := fmt.Fprintf(out, "%s: ok: %s\n", s.label(), found); err != nil {
			return err
		}
	}
	if failed > 0 {
		fmt.Fprintf(errOut, "%s of %d failed\n", pluralize(failed, "service"), len(ss))
		return fmt.Errorf("config: %s failed: %w", pluralize(failed, "service"), ErrReported)
	}
	return nil
}

// scrubPassword masks in msg every password the URL u holds, should a
// driver's message quote one.
func scrubPassword(msg, u string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		return msg
	}
	var pws []string
	if pw, ok := parsed.User.Password(); ok && pw != "" {
		pws = append(pws, pw)
		if esc := url.PathEscape(pw); esc != pw {
			pws = append(pws, esc)
		}
	}
	for k, vs := range parsed.Query() {
		if strings.Contains(strings.ToLower(k), "password") {
			for _, v := range vs {
				if v != "" {
					pws = append(pws, v)
				}
			}
		}
	}
	for _, pw := range pws {
		msg = strings.ReplaceAll(msg, pw, "xxxxx")
	}
	return msg
}

// probePostgres connects to the PostgreSQL server of dsn and describes it:
// its version, the database, the user and, for the locations database, the
// version of rtp's tables in the connection's schema, for the archive the
// one of the first archive's schema. A schema newer than this build reads
// is an error, since a node would refuse it.
func probePostgres(ctx context.Context, dsn string, archiveSchema string) (string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", fmt.Errorf("cannot connect: %w", err)
	}
	defer conn.Close(context.Background())
	var version, db, user string
	var schema *string
	if err := conn.QueryRow(ctx, `SHOW server_version`).Scan(&version); err != nil {
		return "", fmt.Errorf("reading the server version: %w", err)
	}
	if err := conn.QueryRow(ctx, `SELECT current_database(), current_user, current_schema()`).Scan(&db, &user, &schema); err != nil {
		return "", fmt.Errorf("reading the session: %w", err)
	}
	found := fmt.Sprintf("PostgreSQL %s, database %s, user %s", version, db, user)
	if archiveSchema != "" { // the first procedural world's archive
		v, err := tableVersion(ctx, conn, pgx.Identifier{archiveSchema, "meta"}.Sanitize(), `WHERE id = 1`)
		switch {
		case err != nil:
			return "", err
		case v == 0:
			return found + ", archive schema " + archiveSchema + " not yet created", nil
		}
		return fmt.Sprintf("%s, archive schema %s version %d", found, archiveSchema, v), nil
	}
	where := "schema (none: the search_path names no existing schema)"
	if schema != nil {
		where = "schema " + *schema
	}
	found += ", " + where
	v, err := tableVersion(ctx, conn, "schema_version", "")
	switch {
	case err != nil:
		return "", err
	case v == 0:
		return found + ", rtp tables not yet created (the first node to start creates them)", nil
	case v > pgpersist.SchemaVersion:
		return "", fmt.Errorf("%s: rtp tables at version %d, newer than this build's %d: upgrade rtp", found, v, pgpersist.SchemaVersion)
	case v < pgpersist.SchemaVersion:
		return fmt.Sprintf("%s, rtp tables at version %d (the next start migrates them to %d)", found, v, pgpersist.SchemaVersion), nil
	}
	return fmt.Sprintf("%s, rtp tables at version %d", found, v), nil
}

// tableVersion reads the version column of table (a sanitized name,
// resolved through the search_path when unqualified); 0 when the table or
// its row does not exist.
func tableVersion(ctx context.Context, conn *pgx.Conn, table, where string) (int, error) {
	var present bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&present); err != nil {
		return 0, fmt.Errorf("looking for %s: %w", table, err)
	}
	if !present {
		return 0, nil
	}
	var v int
	switch err := conn.QueryRow(ctx, `SELECT version FROM `+table+` `+where).Scan(&v); {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("reading %s: %w", table, err)
	}
	return v, nil
}

// probeRedis connects to the Redis server of u and describes it: its
// version (INFO server) and the database number of the URL.
func probeRedis(ctx context.Context, u string) (string, error) {
	opts, err := goredis.ParseURL(u)
	if err != nil {
		// Validate has parsed it already; never quote it.
		return "", errors.New("invalid Redis URL")
	}
	// One try: the check reports, it does not insist. The address is
	// dialled first so that a server that is not there is told here
	// rather than logged by the client's pool as well.
	opts.MaxRetries, opts.DialerRetries, opts.DialTimeout = -1, 1, connectTimeout
	var d net.Dialer
	c, err := d.DialContext(ctx, opts.Network, opts.Addr)
	if err != nil {
		return "", fmt.Errorf("cannot connect: %w", err)
	}
	c.Close()
	client := goredis.NewClient(opts)
	defer client.Close()
	info, err := client.Info(ctx, "server").Result()
	if err != nil {
		return "", fmt.Errorf("cannot connect: %w", err)
	}
	version := "(unknown version)"
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			version = v
		}
	}
	return fmt.Sprintf("Redis %s, database %d", version, opts.DB), nil
}

// reportConfigProblems writes the problems of a config file to w, one a line,
// and returns an error marked as reported; any other error (the file
// cannot be read) is returned for the caller to print.
func reportConfigProblems(w io.Writer, err error) error {
	// config.LineError is the type of the ttl.yml's problems too.
	errs, ok := lineerr.All(err)
	if !ok {
		return err
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
