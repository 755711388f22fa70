package sqlite

import (
	"cmp"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/rtpengine/rtp/internal/diskspace"
	"github.com/rtpengine/rtp/stores"
	"github.com/rtpengine/rtp/terrain/archive/sqlitestore"
)

// Starting on a full disk.
//
// The terrain archives are the stores of the data directory that can be
// thrown away (a missing tile is generated again), and by far the largest,
// so they give way when the disk is full at start, before the locations
// database and the claims store open:
//   - under the archive's free space floor (ArchiveSpec.MinFreeBytes,
//     MinFreePercent), an archive opens read-only: it serves the tiles it
//     holds and stores no more, and needs no byte of the disk to open;
//   - under startReserve, not even the small stores could open or commit,
//     so the archives' files are removed, largest first, until that much
//     is free (each removal logged with the bytes it gave back).
// Either is a warning in the log and in Archives.Warnings (so in the
// engine's Warnings, stats and /readyz) until a restart with more room.
// While the server runs, a writable archive yields by itself
// (sqlitestore's floor). Rejected:
// failing to start (an operator then has to find what to delete by hand,
// as the error "disk I/O error" of the claims store left them to), and
// opening the archive writable to evict from it (SQLite needs room for
// its write-ahead log to delete anything).

// startReserve is the free space the stores other than the archives need
// to open and take their first commits: a few write-ahead log frames and
// the shared-memory index of each database.
const startReserve = 4 << 20

// diskUsageOf is diskspace.Of; tests replace it.
var diskUsageOf = diskspace.Of

// archiveFloor returns the free space floor of the disk u under the
// archive options a, sqlitestore's defaults filling what is unset.
func archiveFloor(a stores.ArchiveSpec, u diskspace.Usage) uint64 {
	bytes, pct := a.MinFreeBytes, a.MinFreePercent
	if bytes == 0 {
		bytes = sqlitestore.DefaultMinFreeBytes
	}
	if pct == 0 {
		pct = sqlitestore.DefaultMinFreePercent
	}
	return diskspace.Floor(u, pct, bytes)
}

// makeRoom decides, before any store opens, how each archive file of
// files (with the options a) opens on the disk as it is: it removes
// archive files while the disk has less than startReserve free, and
// returns, for each archive that must open read-only, why (keyed by
// path), and the warnings of what it did, each also logged. Nothing
// happens on a disk whose free space cannot be told.
func makeRoom(files []string, a stores.ArchiveSpec, log *slog.Logger) (readOnly map[string]string, warnings []string) {
	if len(files) == 0 {
		return nil, nil
	}
	type file struct {
		path string
		size int64
	}
	var present []file
	for _, p := range files {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			present = append(present, file{p, fi.Size()})
		}
	}
	slices.SortFunc(present, func(a, b file) int { return cmp.Compare(b.size, a.size) })
	for _, f := range present {
		dir := filepath.Dir(f.path)
		u, err := diskUsageOf(dir)
		if err != nil || u.Free >= startReserve || f.size == 0 {
			continue
		}
		freed := f.size
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if suffix != "" {
				if fi, err := os.Stat(f.path + suffix); err == nil {
					freed += fi.Size()
				}
			}
			if err := os.Remove(f.path + suffix); err != nil && !os.IsNotExist(err) {
				log.Warn("engine: disk full: could not remove the terrain archive to make room", "path", f.path+suffix, "err", err)
			}
		}
		msg := fmt.Sprintf("disk full (%d bytes free on %s): removed the terrain archive %s (%d bytes) so that the locations database can open; its tiles are generated again as needed",
			u.Free, dir, f.path, freed)
		log.Warn("engine: " + msg)
		warnings = append(warnings, msg)
	}
	for _, p := range files {
		dir := filepath.Dir(p)
		u, err := diskUsageOf(dir)
		if err != nil {
			continue
		}
		floor := archiveFloor(a, u)
		if u.Free >= floor {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil || fi.Size() == 0 {
			continue // nothing to read: the archive opens as usual and yields from its first Put
		}
		if readOnly == nil {
			readOnly = map[string]string{}
		}
		msg := fmt.Sprintf("disk full (%d bytes free on %s, under the floor of %d): the terrain archive %s is read-only until rtp restarts with more room",
			u.Free, dir, floor, p)
		readOnly[p] = msg
		log.Warn("engine: " + msg)
		warnings = append(warnings, msg)
	}
	return readOnly, warnings
}
