package mesh

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// Version is the encoding version Encode writes and Decode reads.
const Version = 1

const (
	magic       = "RTPM"
	headerSize  = 56
	trailerSize = 4 // CRC-32C
	flagIndex32 = 1 << 0
	// maxIndex16Vertices is the largest vertex count whose indices fit in
	// uint16.
	maxIndex16Vertices = 1 << 16
	quantMax           = math.MaxUint16
)

// Errors wrapped by every Decode failure.
var (
	// ErrTruncated: the input ends before the length its header implies
	// (including counts larger than the input could hold).
	ErrTruncated = errors.New("mesh: truncated encoding")
	// ErrCorrupt: wrong magic, bad header fields, checksum mismatch,
	// trailing bytes or indices out of range.
	ErrCorrupt = errors.New("mesh: corrupt encoding")
	// ErrVersion: a well-formed header of a version this package cannot read.
	ErrVersion = errors.New("mesh: unsupported encoding version")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encode returns the encoding of m (see the package documentation), or
// m.Validate's error.
func Encode(m *Mesh) ([]byte, error) {
	return AppendEncode(nil, m)
}

// AppendEncode appends the encoding of m to dst and returns the extended
// slice. When m is invalid it returns dst unchanged and m.Validate's error.
func AppendEncode(dst []byte, m *Mesh) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return dst, err
	}
	nv := len(m.Vertices) / 3
	ni := len(m.Indices)
	wide := nv > maxIndex16Vertices
	iw := 2
	var flags byte
	if wide {
		iw, flags = 4, flagIndex32
	}
	start := len(dst)
	dst = grow(dst, headerSize+8*nv+iw*ni+trailerSize)

	dst = append(dst, magic...)
	dst = append(dst, Version, byte(m.Quality), flags, 0)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(m.OriginX))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(m.OriginZ))
	for _, f := range m.Bounds.Min {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(f))
	}
	for _, f := range m.Bounds.Max {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(f))
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(nv))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(ni))

	var scale [3]float64
	for a := range 3 {
		if r := float64(m.Bounds.Max[a]) - float64(m.Bounds.Min[a]); r > 0 {
			scale[a] = quantMax / r
		}
	}
	for v := 0; v < nv*3; v += 3 {
		for a := range 3 {
			q := math.Round((float64(m.Vertices[v+a]) - float64(m.Bounds.Min[a])) * scale[a])
			dst = binary.LittleEndian.AppendUint16(dst, uint16(min(max(q, 0), quantMax)))
		}
	}
	for v := 0; v < nv*3; v += 3 {
		u, w := octEncode(m.Normals[v], m.Normals[v+1], m.Normals[v+2])
		dst = append(dst, byte(u), byte(w))
	}
	if wide {
		for _, ix := range m.Indices {
			dst = binary.LittleEndian.AppendUint32(dst, ix)
		}
	} else {
		for _, ix := range m.Indices {
			dst = binary.LittleEndian.AppendUint16(dst, uint16(ix))
		}
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli)), nil
}

// grow returns dst with room for n more bytes.
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	out := make([]byte, len(dst), len(dst)+n)
	copy(out, dst)
	return out
}

// Decode parses an encoding written by Encode. Errors wrap ErrTruncated,
// ErrCorrupt or ErrVersion. The mesh shares no memory with b.
func Decode(b []byte) (*Mesh, error) {
	if len(b) >= len(magic) && string(b[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: bad magic %q", ErrCorrupt, b[:len(magic)])
	}
	if len(b) < headerSize+trailerSize {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header and checksum", ErrTruncated, len(b), headerSize+trailerSize)
	}
	if v := b[4]; v != Version {
		return nil, fmt.Errorf("%w: version %d, this reader handles %d", ErrVersion, v, Version)
	}
	q, flags, reserved := Quality(b[5]), b[6], b[7]
	if !q.Valid() {
		return nil, fmt.Errorf("%w: invalid %v", ErrCorrupt, q)
	}
	if flags&^flagIndex32 != 0 || reserved != 0 {
		return nil, fmt.Errorf("%w: unknown flags %#x or reserved byte %#x", ErrCorrupt, flags, reserved)
	}
	le := binary.LittleEndian
	m := &Mesh{
		Quality: q,
		OriginX: int64(le.Uint64(b[8:])),
		OriginZ: int64(le.Uint64(b[16:])),
	}
	for a := range 3 {
		m.Bounds.Min[a] = math.Float32frombits(le.Uint32(b[24+4*a:]))
		m.Bounds.Max[a] = math.Float32frombits(le.Uint32(b[36+4*a:]))
		lo, hi := m.Bounds.Min[a], m.Bounds.Max[a]
		if !finite(lo) || !finite(hi) || lo > hi {
			return nil, fmt.Errorf("%w: bounds axis %d is %v..%v", ErrCorrupt, a, lo, hi)
		}
	}
	nv, ni := uint64(le.Uint32(b[48:])), uint64(le.Uint32(b[52:]))
	if ni%3 != 0 {
		return nil, fmt.Errorf("%w: %d indices, not a multiple of 3", ErrCorrupt, ni)
	}
	wide := flags&flagIndex32 != 0
	if wide != (nv > maxIndex16Vertices) {
		return nil, fmt.Errorf("%w: index width flag %v disagrees with %d vertices", ErrCorrupt, wide, nv)
	}
	iw := uint64(2)
	if wide {
		iw = 4
	}
	// Check the implied length against the input before allocating: with
	// 32-bit counts this sum cannot overflow uint64.
	need := headerSize + 8*nv + iw*ni + trailerSize
	if uint64(len(b)) < need {
		return nil, fmt.Errorf("%w: %d vertices and %d indices need %d bytes, have %d", ErrTruncated, nv, ni, need, len(b))
	}
	if uint64(len(b)) > need {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, uint64(len(b))-need)
	}
	body := b[:len(b)-trailerSize]
	if got, want := crc32.Checksum(body, castagnoli), le.Uint32(b[len(body):]); got != want {
		return nil, fmt.Errorf("%w: checksum %#08x, stored %#08x", ErrCorrupt, got, want)
	}

	var lo, step [3]float64
	for a := range 3 {
		lo[a] = float64(m.Bounds.Min[a])
		step[a] = (float64(m.Bounds.Max[a]) - lo[a]) / quantMax
	}
	m.Vertices = make([]float32, 3*nv)
	p := body[headerSize:]
	for v := 0; v+2 < len(m.Vertices); v += 3 {
		q := p[2*v : 2*v+6]
		for a := range 3 {
			x := float32(lo[a] + float64(le.Uint16(q[2*a:]))*step[a])
			m.Vertices[v+a] = min(max(x, m.Bounds.Min[a]), m.Bounds.Max[a])
		}
	}
	p = p[6*nv:]
	m.Normals = make([]float32, 3*nv)
	for v := range nv {
		m.Normals[3*v], m.Normals[3*v+1], m.Normals[3*v+2] = octDecode(int8(p[2*v]), int8(p[2*v+1]))
	}
	p = p[2*nv:]
	m.Indices = make([]uint32, ni)
	if wide {
		for i := range m.Indices {
			m.Indices[i] = le.Uint32(p[4*i:])
		}
	} else {
		for i := range m.Indices {
			m.Indices[i] = uint32(le.Uint16(p[2*i:]))
		}
	}
	for i, ix := range m.Indices {
		if uint64(ix) >= nv {
			return nil, fmt.Errorf("%w: index %d is %d, only %d vertices", ErrCorrupt, i, ix, nv)
		}
	}
	return m, nil
}

// Octahedral normals: the unit sphere is projected onto the octahedron
// |x|+|y|+|z| = 1, whose upper half (y >= 0) maps to the diamond
// |u|+|w| <= 1 by (u, w) = (x, z) and whose lower half is folded into the
// corners. Terrain normals point up, so they land in the central diamond
// where the mapping is most even. Each coordinate is stored as a snorm8.

// octEncode returns the quantized octahedral coordinates of (x, y, z),
// trying the four neighbouring quantized points and keeping the one that
// decodes closest to the input. A zero vector encodes as straight up.
func octEncode(x, y, z float32) (int8, int8) {
	fx, fy, fz := float64(x), float64(y), float64(z)
	l1 := math.Abs(fx) + math.Abs(fy) + math.Abs(fz)
	if l1 == 0 {
		return 0, 0
	}
	u, w := fx/l1, fz/l1
	if fy < 0 {
		u, w = (1-math.Abs(w))*signNZ(u), (1-math.Abs(u))*signNZ(w)
	}
	// |u|, |w| <= 1, so the floors lie in [-127, 127]; only the ceilings
	// need clamping.
	us := [2]float64{math.Floor(u * 127), 0}
	ws := [2]float64{math.Floor(w * 127), 0}
	us[1], ws[1] = us[0]+1, ws[0]+1
	if us[1] > 127 {
		us[1] = 127
	}
	if ws[1] > 127 {
		ws[1] = 127
	}
	// Keep the candidate whose (unnormalized) decoding c maximizes
	// cos*|cos| of its angle to the input, i.e. d*|d|/|c|^2 with d the dot
	// product: monotonic in the angle, and compared by cross-multiplying
	// so that it needs neither sqrt nor division.
	bestNum, bestLen, bu, bw := -1.0, 0.0, int8(0), int8(0)
	for _, cu := range us {
		for _, cw := range ws {
			du, dw := cu*(1.0/127), cw*(1.0/127)
			dv := 1 - math.Abs(du) - math.Abs(dw)
			if dv < 0 {
				du, dw = (1-math.Abs(dw))*signNZ(du), (1-math.Abs(du))*signNZ(dw)
			}
			d := fx*du + fy*dv + fz*dw
			num, l2 := d*math.Abs(d), du*du+dv*dv+dw*dw
			if bestLen == 0 || num*bestLen > bestNum*l2 {
				bestNum, bestLen, bu, bw = num, l2, int8(cu), int8(cw)
			}
		}
	}
	return bu, bw
}

// octDecode returns the unit vector of quantized octahedral coordinates.
// Every input, including -128, decodes to a finite unit vector.
func octDecode(qu, qw int8) (x, y, z float32) {
	u := max(float64(qu)/127, -1)
	w := max(float64(qw)/127, -1)
	v := 1 - math.Abs(u) - math.Abs(w)
	if v < 0 {
		u, w = (1-math.Abs(w))*signNZ(u), (1-math.Abs(u))*signNZ(w)
	}
	n := math.Sqrt(u*u + v*v + w*w)
	return float32(u / n), float32(v / n), float32(w / n)
}

// signNZ returns -1 for negative f and +1 otherwise (zero included).
func signNZ(f float64) float64 {
	if f < 0 {
		return -1
	}
	return 1
}
