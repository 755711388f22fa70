package lease

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// codecVersion is the first byte of an encoded Lease.
const codecVersion = 1

// errCodec is the cause of every decoding error.
var errCodec = errors.New("lease: malformed encoded lease")

// AppendBinary appends the encoding of l to b (encoding.BinaryAppender):
// a version byte, then World as a uvarint length and its bytes, X, Y, Z
// and Index as varints, and Owner as World. It fails with ErrInvalid when
// World or Owner is longer than MaxNameLen.
func (l Lease) AppendBinary(b []byte) ([]byte, error) {
	if len(l.World) > MaxNameLen || len(l.Owner) > MaxNameLen {
		return b, fmt.Errorf("%w: name longer than %d bytes", ErrInvalid, MaxNameLen)
	}
	b = append(b, codecVersion)
	b = binary.AppendUvarint(b, uint64(len(l.World)))
	b = append(b, l.World...)
	for _, v := range [...]int64{l.X, l.Y, l.Z, l.Index} {
		b = binary.AppendVarint(b, v)
	}
	b = binary.AppendUvarint(b, uint64(len(l.Owner)))
	return append(b, l.Owner...), nil
}

// MarshalBinary returns the encoding of l (see AppendBinary).
func (l Lease) MarshalBinary() ([]byte, error) {
	return l.AppendBinary(make([]byte, 0, 1+2+len(l.World)+4*10+len(l.Owner)))
}

// UnmarshalBinary decodes what AppendBinary encoded into l. It accepts
// only the exact encoding of a Lease: no trailing bytes, no overlong
// varints, names of at most MaxNameLen bytes. On error l is unchanged.
func (l *Lease) UnmarshalBinary(b []byte) error {
	if len(b) == 0 || b[0] != codecVersion {
		return fmt.Errorf("%w: unknown version", errCodec)
	}
	d := decoder{b: b[1:]}
	var out Lease
	out.World = d.name()
	out.X, out.Y, out.Z, out.Index = d.int(), d.int(), d.int(), d.int()
	out.Owner = d.name()
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes", errCodec, len(d.b))
	}
	if d.err != nil {
		return d.err
	}
	*l = out
	return nil
}

// decoder reads an encoded Lease; its first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) name() string {
	if d.err != nil {
		return ""
	}
	n, k := binary.Uvarint(d.b)
	if k <= 0 || k != uvarintLen(n) {
		d.err = fmt.Errorf("%w: bad name length", errCodec)
		return ""
	}
	d.b = d.b[k:]
	if n > MaxNameLen || n > uint64(len(d.b)) {
		d.err = fmt.Errorf("%w: name length %d out of range", errCodec, n)
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) int() int64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Varint(d.b)
	if k <= 0 || k != varintLen(v) {
		d.err = fmt.Errorf("%w: bad varint", errCodec)
		return 0
	}
	d.b = d.b[k:]
	return v
}

// uvarintLen is the length of the shortest uvarint encoding of v.
func uvarintLen(v uint64) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutUvarint(buf[:], v)
}

// varintLen is the length of the shortest varint encoding of v.
func varintLen(v int64) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutVarint(buf[:], v)
}
