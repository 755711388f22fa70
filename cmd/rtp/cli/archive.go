package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/sqlitestore"
)

// DefaultArchivePath is where rtp keeps its terrain archive by default.
const DefaultArchivePath = "rtp-data/archive.db"

type archiveOptions struct {
	db                   string
	maxEntries, maxBytes int64
}

func newArchiveCmd() *cobra.Command {
	var o archiveOptions
	cmd := &cobra.Command{
		Use:   "archive",
		Short: "Inspect, verify or clear the terrain archive",
		Long: `The terrain archive is a bounded, disposable cache of generated terrain
tiles in a SQLite database. Clearing it never changes the world: every tile
is generated again when next needed.

These commands open the archive without trimming it: --max-entries and
--max-bytes are only the limits reported (pass the server's if they are not
the defaults).`,
	}
	f := cmd.PersistentFlags()
	f.StringVar(&o.db, "db", DefaultArchivePath, "archive database (SQLite)")
	f.Int64Var(&o.maxEntries, "max-entries", archive.DefaultMaxEntries, "entry limit to report (nothing is trimmed)")
	f.Int64Var(&o.maxBytes, "max-bytes", archive.DefaultMaxBytes, "byte limit to report (nothing is trimmed)")
	cmd.AddCommand(newArchiveStatsCmd(&o), newArchiveVerifyCmd(&o), newArchiveClearCmd(&o))
	return cmd
}

// openArchiveStore opens an existing archive database: these commands
// inspect an archive, they never create one.
func openArchiveStore(ctx context.Context, o *archiveOptions, stderr io.Writer) (archive.Store, error) {
	if o.maxEntries <= 0 || o.maxBytes <= 0 {
		return nil, usageError{fmt.Errorf("archive: --max-entries %d and --max-bytes %d must be positive", o.maxEntries, o.maxBytes)}
	}
	if _, err := os.Stat(o.db); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("archive: no archive database at %s (use --db)", o.db)
		}
		return nil, fmt.Errorf("archive: %w", err)
	}
	return sqlitestore.Open(ctx, o.db, sqlitestore.Options{
		Limits: archive.Limits{MaxEntries: o.maxEntries, MaxBytes: o.maxBytes},
		NoTrim: true,
		Logger: slog.New(slog.NewTextHandler(stderr, nil)),
	})
}

// withArchiveStore runs fn with the store open, closing it afterwards.
func withArchiveStore(cmd *cobra.Command, o *archiveOptions, fn func(archive.Store) error) (err error) {
	s, err := openArchiveStore(cmd.Context(), o, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer func() {
		if cerr := s.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("archive: close %s: %w", o.db, cerr)
		}
	}()
	return fn(s)
}

func newArchiveStatsCmd(o *archiveOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "stats",
		Short: "Print the archive's entries, bytes and limits",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withArchiveStore(cmd, o, func(s archive.Store) error {
				st, err := s.Stats(cmd.Context())
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "database  %s\nentries   %d of %d\nbytes     %d of %d (%s of %s)\n",
					o.db, st.Entries, st.Limits.MaxEntries, st.Bytes, st.Limits.MaxBytes, humanBytes(st.Bytes), humanBytes(st.Limits.MaxBytes))
				return err
			})
		},
	}
}

func newArchiveVerifyCmd(o *archiveOptions) *cobra.Command {
	var deleteInvalid bool
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check every archived tile completely",
		Long: `Verify reads every record and checks it as the archive does before using
it: the key must parse and hash to the record's digest, and the payload must
pass its checksum and decode into a tile that validates against the request
in the key. It prints each invalid record and the counts. It fails when
invalid records remain; --delete-invalid removes them (the archive would
regenerate them anyway).`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withArchiveStore(cmd, o, func(s archive.Store) error {
				return verifyArchive(cmd.Context(), s, deleteInvalid, cmd.OutOrStdout())
			})
		},
	}
	cmd.Flags().BoolVar(&deleteInvalid, "delete-invalid", false, "delete the invalid records")
	return cmd
}

func verifyArchive(ctx context.Context, s archive.Store, deleteInvalid bool, out io.Writer) error {
	var valid int
	var invalid []archive.Digest
	err := s.Scan(ctx, func(r archive.Record) error {
		k, _, err := archive.Verify(r)
		if err == nil {
			valid++
			return nil
		}
		invalid = append(invalid, r.Digest)
		what := "unparsable key"
		if k.Producer.Name != "" {
			what = fmt.Sprintf("%s %v", k.Producer, k.Request)
		}
		_, werr := fmt.Fprintf(out, "invalid %x %s: %v\n", r.Digest[:8], what, err)
		return werr
	})
	if err != nil {
		return fmt.Errorf("archive: verify: %w", err)
	}
	if _, err := fmt.Fprintf(out, "%d records: %d valid, %d invalid\n", valid+len(invalid), valid, len(invalid)); err != nil {
		return err
	}
	if len(invalid) == 0 {
		return nil
	}
	if !deleteInvalid {
		return fmt.Errorf("archive: %d invalid records (remove them with --delete-invalid)", len(invalid))
	}
	for _, d := range invalid {
		if err := s.Delete(ctx, d); err != nil {
			return fmt.Errorf("archive: delete %x: %w", d[:8], err)
		}
	}
	_, err = fmt.Fprintf(out, "deleted %d invalid records\n", len(invalid))
	return err
}

func newArchiveClearCmd(o *archiveOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "clear",
		Short: "Remove every archived tile",
		Long: `Clear empties the archive. Nothing else changes: the tiles are generated
again when next needed. Run it while no server uses the archive, or use the
server's own clear, which also stops tiles generated before it from being
written back.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withArchiveStore(cmd, o, func(s archive.Store) error {
				st, err := s.Stats(cmd.Context())
				if err != nil {
					return err
				}
				if err := s.Clear(cmd.Context()); err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "cleared %d entries (%s) from %s\n", st.Entries, humanBytes(st.Bytes), o.db)
				return err
			})
		},
	}
}

// humanBytes formats n bytes with a binary unit.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
