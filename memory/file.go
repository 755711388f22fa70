package memory

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"
	"unicode/utf8"
)

// The memory file (all integers big-endian):
//
//	magic      4 bytes  "RTPM"
//	version    int32    4 (1 to 3 are read)
//	world      uint16 length, then that many bytes of UTF-8
//	shape      (version 4) uint16 length + UTF-8: the shape's String(),
//	           "" when the writing table had no Shape
//	shape len  (version 4) int64   the shape's Len(); 0 without a shape
//	universe   (version 4) int64   the table's Len; 0 when not recorded
//	stride     int32    bytes per run record: 25 since version 3 (16, 17 before)
//	count      int64    number of run records
//	runs       count records, ascending by start, disjoint:
//	             start    int64
//	             length   int64
//	             cause    byte    (version >= 2)
//	             expires  int64   (version >= 3) Unix seconds; <= 0: static
//	           a reader skips stride minus the fields it knows, so a later
//	           version may append fields to a record
//	biomes     int32 count, then count entries:
//	             name     uint16 length + UTF-8
//	             count    int64   rejections attributed to that biome
//	checksum   (version 4) uint32 CRC-32C (Castagnoli) of every byte before it
//
// Active and probation runs never overlap, so both are written as one sorted
// stream; on load the wall clock partitions them again (offline decay).
// Versions 1 and 2 carry no expiry: every run loads as static. Version 1
// carries no cause either: its runs load as CauseSafety.
//
// # Integrity and identity (version 4)
//
// The checksum covers the whole file, magic and version included, so any
// damage of up to 32 bits in a row (every single-bit flip in particular) is
// refused as corrupt instead of being loaded as other runs. The shape,
// shape length and universe name the index space the runs refer to: a
// spiral index means a chunk only for one shape (kind, centre, radii and
// rotation, as its String() gives them). Load refuses a file whose shape
// differs from the table's (see ShapeMismatchError) rather than apply its
// runs to the wrong chunks.
//
// Versions 1 to 3 carry neither: they load as before, unchecked, and a
// damaged or foreign file of those versions is caught only when it is
// malformed or its runs do not fit the table. Save always writes version
// 4, so a file is protected from its next save on.

// FileVersion is the version Save writes.
const FileVersion = 4

// castagnoli is the CRC-32C table of the version 4 checksum.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var fileMagic = [4]byte{'R', 'T', 'P', 'M'}

const (
	maxWorldName = math.MaxUint16
	strideV1     = 16
	strideV2     = 17
	strideV3     = 25
	strideV4     = strideV3
	maxStride    = 1 << 10
	checksumSize = 4
)

// ErrCorrupt is wrapped by every error about a malformed memory file.
var ErrCorrupt = errors.New("memory: corrupt file")

// CorruptError describes a malformed memory file and, when Open moved it out
// of the way, where it went.
type CorruptError struct {
	Path    string // the file as named
	Offset  int64  // byte offset where decoding failed
	Reason  string
	MovedTo string // set by Open when the file was moved aside
}

func (e *CorruptError) Error() string {
	msg := fmt.Sprintf("memory: corrupt file %s at byte %d: %s", e.Path, e.Offset, e.Reason)
	if e.MovedTo != "" {
		msg += "; moved aside to " + e.MovedTo
	}
	return msg
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// ErrShapeMismatch is wrapped by every error about a memory file built for
// another index space than the table's (see ShapeMismatchError).
var ErrShapeMismatch = errors.New("memory: shape mismatch")

// ShapeMismatchError reports a memory file whose spiral indices refer to
// another shape (or a larger universe) than the table's, so its runs would
// mark the wrong chunks. Load returns it without applying any run; Open
// also moves the file aside.
type ShapeMismatchError struct {
	Path       string // the file as named, when known
	File       string // the index space the file was built for
	Configured string // the table's index space
	MovedTo    string // set by Open when the file was moved aside
}

func (e *ShapeMismatchError) Error() string {
	name := "memory file"
	if e.Path != "" {
		name += " " + e.Path
	}
	msg := fmt.Sprintf("memory: %s was built for %s, but the table is configured for %s; its runs were not applied",
		name, e.File, e.Configured)
	if e.MovedTo != "" {
		msg += "; moved aside to " + e.MovedTo
	}
	return msg
}

func (e *ShapeMismatchError) Unwrap() error { return ErrShapeMismatch }

// describeSpace renders an index space for ShapeMismatchError.
func describeSpace(shape string, shapeLen, universe int64) string {
	var s string
	if shape != "" {
		s = fmt.Sprintf("shape %s of %d chunks", shape, shapeLen)
	}
	if universe > 0 {
		if s != "" {
			s += " in "
		}
		s += fmt.Sprintf("a universe of %d indices", universe)
	}
	if s == "" {
		return "an unrecorded index space"
	}
	return s
}

// File is the decoded content of a memory file.
type File struct {
	Version int
	World   string
	// Shape, ShapeLen and Universe identify the index space the runs refer
	// to: the String() and Len() of the writing table's Options.Shape ("" and
	// 0 when it had none) and the table's Len. They are recorded since
	// version 4; earlier versions decode with "", 0 and 0 (not recorded).
	Shape    string
	ShapeLen int64
	Universe int64
	// Checksum is the CRC-32C a version 4 file carries, which Decode
	// verified; 0 for earlier versions, which have none. Encode ignores it
	// and computes the checksum of what it writes.
	Checksum uint32
	Runs     []Run // Expires 0 for static runs; TTL is not stored (0)
	Biomes   map[string]int64
}

// Decode reads a memory file of any supported version. It never panics and
// never allocates more than the input's size justifies. Errors wrap
// ErrCorrupt (as *CorruptError) for malformed input, including a version 4
// file whose checksum does not match its content. Decode does not know the
// table a file is meant for: Load checks that the file's index space fits.
func Decode(data []byte) (*File, error) {
	d := decoder{buf: data}
	f, err := d.file()
	if err != nil {
		return nil, err
	}
	return f, nil
}

type decoder struct {
	buf []byte
	off int
}

func (d *decoder) fail(format string, args ...any) error {
	return &CorruptError{Offset: int64(d.off), Reason: fmt.Sprintf(format, args...)}
}

func (d *decoder) take(n int, what string) ([]byte, error) {
	if n < 0 || len(d.buf)-d.off < n {
		return nil, d.fail("truncated %s: need %d bytes, have %d", what, n, len(d.buf)-d.off)
	}
	b := d.buf[d.off : d.off+n]
	d.off += n
	return b, nil
}

func (d *decoder) u16(what string) (uint16, error) {
	b, err := d.take(2, what)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint16(b), nil
}

func (d *decoder) i32(what string) (int32, error) {
	b, err := d.take(4, what)
	if err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

func (d *decoder) i64(what string) (int64, error) {
	b, err := d.take(8, what)
	if err != nil {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

func (d *decoder) str(what string) (string, error) {
	n, err := d.u16(what + " length")
	if err != nil {
		return "", err
	}
	b, err := d.take(int(n), what)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		return "", d.fail("%s is not UTF-8", what)
	}
	return string(b), nil
}

func (d *decoder) file() (*File, error) {
	magic, err := d.take(4, "magic")
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(magic, fileMagic[:]) {
		d.off = 0
		return nil, d.fail("bad magic %q, want %q", magic, fileMagic[:])
	}
	version, err := d.i32("version")
	if err != nil {
		return nil, err
	}
	minStride := map[int32]int32{1: strideV1, 2: strideV2, 3: strideV3, 4: strideV4}[version]
	if minStride == 0 {
		return nil, d.fail("unsupported version %d (this build reads 1 to %d)", version, FileVersion)
	}
	f := &File{Version: int(version)}
	if version >= 4 {
		// Check the whole file before reading any field of it.
		if len(d.buf)-d.off < checksumSize {
			return nil, d.fail("truncated checksum: need %d bytes, have %d", checksumSize, len(d.buf)-d.off)
		}
		end := len(d.buf) - checksumSize
		f.Checksum = binary.BigEndian.Uint32(d.buf[end:])
		if sum := crc32.Checksum(d.buf[:end], castagnoli); sum != f.Checksum {
			d.off = end
			return nil, d.fail("checksum mismatch: the file says %08x, its content sums to %08x", f.Checksum, sum)
		}
		d.buf = d.buf[:end]
	}
	if f.World, err = d.str("world name"); err != nil {
		return nil, err
	}
	if version >= 4 {
		if f.Shape, err = d.str("shape"); err != nil {
			return nil, err
		}
		at := d.off
		if f.ShapeLen, err = d.i64("shape length"); err != nil {
			return nil, err
		}
		if f.ShapeLen < 0 || (f.Shape == "") != (f.ShapeLen == 0) {
			d.off = at
			return nil, d.fail("shape length %d does not fit shape %q", f.ShapeLen, f.Shape)
		}
		at = d.off
		if f.Universe, err = d.i64("universe"); err != nil {
			return nil, err
		}
		if f.Universe < 0 {
			d.off = at
			return nil, d.fail("negative universe %d", f.Universe)
		}
	}
	stride, err := d.i32("stride")
	if err != nil {
		return nil, err
	}
	if stride < minStride || stride > maxStride {
		return nil, d.fail("record stride %d outside [%d, %d] for version %d", stride, minStride, maxStride, version)
	}
	count, err := d.i64("run count")
	if err != nil {
		return nil, err
	}
	if count < 0 || count > int64(len(d.buf)-d.off)/int64(stride) {
		return nil, d.fail("run count %d does not fit the %d remaining bytes", count, len(d.buf)-d.off)
	}
	f.Runs = make([]Run, count)
	var prevEnd int64
	for i := range f.Runs {
		at := d.off
		rec, _ := d.take(int(stride), "run") // fits: checked above
		r := Run{
			Start: int64(binary.BigEndian.Uint64(rec)),
			Len:   int64(binary.BigEndian.Uint64(rec[8:])),
			Cause: CauseSafety,
		}
		if version >= 2 {
			r.Cause = Cause(rec[16])
			if !r.Cause.Valid() {
				d.off = at + 16
				return nil, d.fail("run %d: unknown cause %d", i, rec[16])
			}
		}
		if version >= 3 {
			r.Expires = max(int64(binary.BigEndian.Uint64(rec[17:])), 0)
		}
		switch {
		case r.Start < 0 || r.Len <= 0 || r.Start > math.MaxInt64-r.Len:
			d.off = at
			return nil, d.fail("run %d: bad interval start %d length %d", i, r.Start, r.Len)
		case i > 0 && r.Start < prevEnd:
			d.off = at
			return nil, d.fail("run %d: start %d overlaps or precedes the previous run ending at %d", i, r.Start, prevEnd)
		case f.Universe > 0 && r.End() > f.Universe:
			d.off = at
			return nil, d.fail("run %d: [%d, %d) lies past the file's universe of %d indices", i, r.Start, r.End(), f.Universe)
		}
		prevEnd = r.End()
		f.Runs[i] = r
	}
	nb, err := d.i32("biome count")
	if err != nil {
		return nil, err
	}
	// Each entry takes at least 10 bytes.
	if nb < 0 || int64(nb) > int64(len(d.buf)-d.off)/10 {
		return nil, d.fail("biome count %d does not fit the %d remaining bytes", nb, len(d.buf)-d.off)
	}
	f.Biomes = make(map[string]int64, nb)
	for range nb {
		name, err := d.str("biome name")
		if err != nil {
			return nil, err
		}
		n, err := d.i64("biome count")
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, d.fail("biome %q: negative count %d", name, n)
		}
		if _, dup := f.Biomes[name]; dup {
			return nil, d.fail("biome %q listed twice", name)
		}
		f.Biomes[name] = n
	}
	if d.off != len(d.buf) {
		return nil, d.fail("%d trailing bytes", len(d.buf)-d.off)
	}
	return f, nil
}

// Encode appends the version 4 encoding of f (its Version and Checksum are
// ignored) to dst, checksum included. Runs must be sorted and disjoint;
// Biomes are written in name order so the bytes are deterministic.
func (f *File) Encode(dst []byte) ([]byte, error) {
	switch {
	case len(f.World) > maxWorldName:
		return nil, fmt.Errorf("memory: world name of %d bytes exceeds %d", len(f.World), maxWorldName)
	case len(f.Shape) > maxWorldName:
		return nil, fmt.Errorf("memory: shape description of %d bytes exceeds %d", len(f.Shape), maxWorldName)
	case f.ShapeLen < 0 || (f.Shape == "") != (f.ShapeLen == 0):
		return nil, fmt.Errorf("memory: shape length %d does not fit shape %q", f.ShapeLen, f.Shape)
	case f.Universe < 0:
		return nil, fmt.Errorf("memory: negative universe %d", f.Universe)
	}
	be := binary.BigEndian
	begin := len(dst)
	dst = append(dst, fileMagic[:]...)
	dst = be.AppendUint32(dst, FileVersion)
	dst = be.AppendUint16(dst, uint16(len(f.World)))
	dst = append(dst, f.World...)
	dst = be.AppendUint16(dst, uint16(len(f.Shape)))
	dst = append(dst, f.Shape...)
	dst = be.AppendUint64(dst, uint64(f.ShapeLen))
	dst = be.AppendUint64(dst, uint64(f.Universe))
	dst = be.AppendUint32(dst, strideV4)
	dst = be.AppendUint64(dst, uint64(len(f.Runs)))
	for _, r := range f.Runs {
		dst = be.AppendUint64(dst, uint64(r.Start))
		dst = be.AppendUint64(dst, uint64(r.Len))
		dst = append(dst, byte(r.Cause))
		dst = be.AppendUint64(dst, uint64(r.Expires))
	}
	names := make([]string, 0, len(f.Biomes))
	for name := range f.Biomes {
		if len(name) > maxWorldName {
			return nil, fmt.Errorf("memory: biome name of %d bytes exceeds %d", len(name), maxWorldName)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	dst = be.AppendUint32(dst, uint32(len(names)))
	for _, name := range names {
		dst = be.AppendUint16(dst, uint16(len(name)))
		dst = append(dst, name...)
		dst = be.AppendUint64(dst, uint64(f.Biomes[name]))
	}
	return be.AppendUint32(dst, crc32.Checksum(dst[begin:], castagnoli)), nil
}

// maxFileSize bounds what Open reads into memory (1 GiB: 40 million runs).
const maxFileSize = 1 << 30

// Open loads the table saved at path, or returns an empty table when path
// does not exist. Runs are partitioned by the wall clock (Options.Clock):
// a dynamic run is active until its expiry, on probation until expiry plus
// its cause's TTL, and dropped after (offline decay).
//
// A malformed file (a version 4 file whose checksum fails included) is
// never overwritten: Open renames it aside (to path.corrupt-<unix seconds>)
// and returns an empty, usable table together with a *CorruptError that
// says where it went. A file built for another shape (Load's
// *ShapeMismatchError) is treated alike: renamed to path.shape-<unix
// seconds>, and an empty, usable table is returned with the error, so the
// caller can warn and start fresh; none of its runs is applied. Any other
// error (the file cannot be read or moved) returns a nil table.
//
// When Options.World is empty the table takes the file's world name; when
// both are set and differ, Open fails with ErrWorldMismatch and leaves the
// file alone.
func Open(path string, opts Options) (*Table, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	data, err := readFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return New(opts)
	}
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	f, err := Decode(data)
	if err == nil && opts.World == "" {
		opts.World = f.World
	}
	t, nerr := New(opts)
	if nerr != nil {
		return nil, nerr
	}
	if err == nil {
		err = t.Load(f)
	}
	var ce *CorruptError
	var se *ShapeMismatchError
	switch {
	case errors.As(err, &ce):
		ce.Path = path
		aside, rerr := moveAside(path, "corrupt", t.opts.Clock())
		if rerr != nil {
			return nil, errors.Join(err, fmt.Errorf("memory: moving corrupt file aside: %w", rerr))
		}
		ce.MovedTo = aside
		return t, ce
	case errors.As(err, &se):
		se.Path = path
		aside, rerr := moveAside(path, "shape", t.opts.Clock())
		if rerr != nil {
			return nil, errors.Join(err, fmt.Errorf("memory: moving the other shape's file aside: %w", rerr))
		}
		se.MovedTo = aside
		return t, se
	case err != nil:
		return nil, err
	}
	return t, nil
}

// moveAside renames path to path.<what>-<unix seconds> and returns the new
// name.
func moveAside(path, what string, now time.Time) (string, error) {
	aside := fmt.Sprintf("%s.%s-%d", path, what, now.Unix())
	return aside, os.Rename(path, aside)
}

func readFile(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(bufio.NewReader(fh), maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxFileSize)
	}
	return data, nil
}

// ErrWorldMismatch is returned when a memory file belongs to another world.
var ErrWorldMismatch = errors.New("memory: world mismatch")

// Load replaces the table's content with f, partitioned by the current
// time. f.World must equal the table's world (otherwise ErrWorldMismatch).
//
// f must describe the table's index space, or Load returns a
// *ShapeMismatchError and changes nothing: when both f.Shape and
// Options.Shape are set, f.Shape and f.ShapeLen must equal the String()
// and Len() of Options.Shape, and when f.Universe exceeds the table's Len,
// every run must still fit the table. A table without Options.Shape (a tool
// that only reads indices) accepts any shape, and a file that records none
// (versions 1 to 3, or a File built by hand) is not checked. Otherwise
// runs that do not fit the table in order are a *CorruptError.
func (t *Table) Load(f *File) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.loadLocked(f)
}

func (t *Table) loadLocked(f *File) error {
	if f.World != t.opts.World {
		return fmt.Errorf("%w: file is for %q, table for %q", ErrWorldMismatch, f.World, t.opts.World)
	}
	if sh := t.opts.Shape; sh != nil && f.Shape != "" && (f.Shape != sh.String() || f.ShapeLen != sh.Len()) {
		return t.mismatch(f)
	}
	now := t.opts.Clock().Unix()
	var active, prob []Run
	var prevEnd int64
	for i, r := range f.Runs {
		inOrder := r.Start >= prevEnd && r.Len > 0 && r.Start >= 0 && r.Cause.Valid()
		if inOrder && r.End() > t.opts.Len && f.Universe > t.opts.Len {
			// Intact, but written for a larger universe than this table's.
			return t.mismatch(f)
		}
		if !inOrder || r.End() > t.opts.Len {
			return &CorruptError{Reason: fmt.Sprintf("run %d [%d, %d) cause %d does not fit a table of %d indices in order", i, r.Start, r.End(), r.Cause, t.opts.Len)}
		}
		prevEnd = r.End()
		if r.Expires <= 0 {
			r.Expires, r.TTL = 0, 0
			active = append(active, r)
			continue
		}
		// The file keeps no TTL: derive the probation window from the cause. A policy that now says permanent (or forget)
		// leaves no probation window; the written expiry still counts.
		r.TTL = 0
		if ttl := t.opts.TTL(r.Cause, ""); ttl > 0 {
			_, r.TTL = expiryFor(0, ttl)
		}
		switch {
		case now < r.Expires:
			active = append(active, r)
		case now < r.Expires+r.TTL:
			prob = append(prob, r)
		}
	}
	t.pending = t.pending[:0]
	t.nRestore = 0
	t.install(active, prob)
	clear(t.rejections)
	for name, n := range f.Biomes {
		t.rejections[causeSource{CauseBiome, name}] = n
	}
	return nil
}

// mismatch returns the *ShapeMismatchError of loading f into t.
func (t *Table) mismatch(f *File) error {
	shape, shapeLen := t.shapeID()
	return &ShapeMismatchError{
		File:       describeSpace(f.Shape, f.ShapeLen, f.Universe),
		Configured: describeSpace(shape, shapeLen, t.opts.Len),
	}
}

// shapeID returns the description and length of Options.Shape, or "" and
// 0 without one.
func (t *Table) shapeID() (string, int64) {
	if t.opts.Shape == nil {
		return "", 0
	}
	return t.opts.Shape.String(), t.opts.Shape.Len()
}

// Snapshot returns the table's content as a File: active and probation runs
// in one sorted stream (probation runs restored since the last rebuild carry
// their new expiry), and the rejection counts of CauseBiome by biome name.
// Pending rejections are not included; Save rebuilds first.
func (t *Table) Snapshot() *File {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.snapshotLocked()
}

func (t *Table) snapshotLocked() *File {
	act := t.snap.Load().active
	f := &File{Version: FileVersion, World: t.opts.World, Universe: t.opts.Len, Biomes: make(map[string]int64)}
	f.Shape, f.ShapeLen = t.shapeID()
	f.Runs = make([]Run, 0, act.len()+t.prob.len())
	i, j := 0, 0
	for i < act.len() || j < t.prob.len() {
		if j >= t.prob.len() || (i < act.len() && act.start(i) < t.prob.start(j)) {
			f.Runs = append(f.Runs, act.run(i))
			i++
			continue
		}
		r := t.prob.run(j)
		if t.restore[j] > 0 {
			r.Expires = t.restore[j]
		}
		f.Runs = append(f.Runs, r)
		j++
	}
	for cs, n := range t.rejections {
		if cs.cause == CauseBiome && cs.source != "" {
			f.Biomes[cs.source] = n
		}
	}
	return f
}

// Save rebuilds the table and writes it to path atomically (creating its
// directory if needed): a temporary file in the same directory, fsync, rename over path, fsync of the directory. A
// crash leaves either the old file or the new one, never a torn one.
func (t *Table) Save(path string) error {
	t.mu.Lock()
	t.rebuildLocked(t.opts.Clock())
	f := t.snapshotLocked()
	t.mu.Unlock()
	data, err := f.Encode(make([]byte, 0, 96+len(f.Shape)+len(f.Runs)*strideV4))
	if err != nil {
		return err
	}
	return writeAtomic(path, data)
}

func writeAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("memory: save: %w", err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("memory: save: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("memory: save: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("memory: save: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("memory: save: %w", err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("memory: save: %w", err)
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // best effort: some filesystems refuse directory fsync
		d.Close()
	}
	return nil
}
