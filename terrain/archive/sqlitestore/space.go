package sqlitestore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rtpengine/rtp/internal/diskspace"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/internal/dbstore"
)

// The archive yields to the files beside it when the disk runs low.
//
// Design note: the archive is the one store of the data directory that can
// be thrown away (a miss costs a regeneration, never a tile), and the
// largest by far (4 GiB by default), so it is the one that gives way. Each
// Put first compares the file system's free space with the floor
// (Options.MinFreeBytes, MinFreePercent); under it, the Put stores nothing
// and evicts the least recently used records worth what is missing, then
// gives their pages back to the file system (incremental vacuum, which a
// new archive enables, and a truncating WAL checkpoint). A statfs per Put
// costs about a microsecond beside a write transaction of tens, so the
// check is not cached. Rejected: a background watcher of the free space
// (one more goroutine and a period to tune, while only writes can fill the
// disk and every write passes here), and growing until SQLite reports the
// disk full (by then the locations database cannot commit either, and a
// full disk may keep the server from starting again).

// diskUsage is diskspace.Of; tests replace it.
var diskUsage = diskspace.Of

// minReclaim is the least a Put under the floor evicts, so that a store
// under a slowly filling disk gives back space in useful steps.
const minReclaim = 1 << 20

// checkSpace reports whether the archive's file system has less free space
// than the floor, and how many bytes are missing. It logs when the archive
// starts and stops yielding. It runs on the writer goroutine only.
func (s *Store) checkSpace() (low bool, missing int64) {
	if s.opts.MinFreeBytes < 0 && s.opts.MinFreePercent < 0 {
		return false, 0
	}
	dir := filepath.Dir(s.path)
	u, err := diskUsage(dir)
	if err != nil {
		return false, 0 // cannot tell: SQLite's own errors will say
	}
	floor := diskspace.Floor(u, s.opts.MinFreePercent, s.opts.MinFreeBytes)
	// The write-ahead log's frames are copied into the database file at
	// the next checkpoint, which may grow the file by as much at once: count
	// them as spent.
	free := u.Free
	if fi, err := os.Stat(s.path + "-wal"); err == nil {
		free -= min(free, uint64(fi.Size()))
	}
	// Once yielding, the archive grows again only with a margin above the
	// floor (an eighth of it, at least minReclaim): without one, each Put
	// near the floor would flip between storing and evicting, and log each
	// flip.
	resume := floor + max(floor/8, minReclaim)
	low = free < floor || s.yielding && free < resume
	if low != s.yielding {
		s.yielding = low
		if low {
			s.floorLog.Warn(s.log, "sqlitestore: disk low: the archive stops growing and gives back space to the files beside it",
				"path", s.path, "free_bytes", u.Free, "wal_bytes", u.Free-free, "floor_bytes", floor, "dir", dir)
		} else {
			s.floorLog.Info(s.log, "sqlitestore: disk space is back above the floor: the archive grows again",
				"path", s.path, "free_bytes", u.Free, "floor_bytes", floor)
		}
	}
	if !low {
		return false, 0
	}
	return true, max(int64(resume-free), minReclaim)
}

// shrink evicts the least recently used records until the store holds at
// least missing bytes less (or nothing).
func (t *wtx) shrink(missing int64) error {
	l := archive.Limits{MaxEntries: t.w.limits.MaxEntries, MaxBytes: max(t.c.Bytes-missing, 0)}
	return dbstore.Evict(t, &t.c, l, nil)
}

// reclaim gives the pages of evicted records back to the file system: an
// incremental vacuum (a no-op in an archive created before it was enabled,
// whose free pages are then reused by later writes instead) and a
// checkpoint that truncates the write-ahead log, on the writing
// connection, in the transaction slot of the write that evicted (ctx).
// Failures are logged.
func (s *Store) reclaim(ctx context.Context) {
	for _, q := range []string{`PRAGMA incremental_vacuum`, `PRAGMA wal_checkpoint(TRUNCATE)`} {
		if _, err := s.w.conn.ExecContext(ctx, q); err != nil {
			s.warnings.Warn(s.log, "sqlitestore: giving space back failed", "path", s.path, "step", q,
				"err", fmt.Errorf("sqlitestore: reclaim: %w", err))
			return
		}
	}
}
