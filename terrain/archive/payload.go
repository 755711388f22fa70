package archive

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"reflect"
	"unsafe"

	"github.com/rtpengine/rtp/terrain"
)

// The payload layout (all numbers little-endian):
//
//	"RTPT" 1                       magic and format version (5 bytes)
//	u32 n, request[n]              canonical encoding of the tile's Request
//	u32 elevations, u32 water, u32 covers   sample counts
//	f32 min, f32 max               extrema, by their bits
//	zero bytes                     0 to 3, so the samples start at a multiple of 4
//	f32 elevations[], f32 water[], u8 covers[]
//	u32 CRC-32C                    of every byte before it
//
// The counts are explicit rather than derived from the request so that a
// decoder bounds allocation by the input length alone (the counts must
// account for exactly the bytes present) and a record with wrong lengths is
// reported as such instead of misread.
const payloadMagic = "RTPT\x01"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by every payload decoding failure.
var ErrCorrupt = errors.New("archive: corrupt payload")

// EncodeTile returns the payload encoding of t. It does not validate t.
func EncodeTile(t *terrain.Tile) []byte {
	n := len(payloadMagic) + 4 + 64 + 12 + 8 + 3 + 4*len(t.Elevations) + 4*len(t.Water) + len(t.Cover) + 4
	b := make([]byte, 0, n)
	b = append(b, payloadMagic...)
	b = appendRequest(b, t.Request)
	b = appendU32(b, len(t.Elevations))
	b = appendU32(b, len(t.Water))
	b = appendU32(b, len(t.Cover))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(t.Min))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(t.Max))
	b = append(b, make([]byte, pad(len(b)))...)
	b = appendFloats(b, t.Elevations)
	b = appendFloats(b, t.Water)
	for _, c := range t.Cover {
		b = append(b, byte(c))
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func appendFloats(b []byte, fs []float32) []byte {
	at := len(b)
	b = append(b, make([]byte, 4*len(fs))...)
	out := b[at:]
	for i, f := range fs {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(f))
	}
	return b
}

// DecodeTile decodes a payload written by EncodeTile after checking its
// checksum. It allocates at most a small constant plus about twice the
// payload length, whatever the input, and never panics. The tile is not
// validated: call (*terrain.Tile).Validate with the expected request.
func DecodeTile(p []byte) (*terrain.Tile, error) {
	h, err := parsePayload(p)
	if err != nil {
		return nil, err
	}
	if err := h.decodeRequest(); err != nil {
		return nil, err
	}
	t := h.newTile()
	for i := range t.Elevations {
		t.Elevations[i] = h.float(i)
	}
	for i := range t.Water {
		t.Water[i] = h.float(h.ne + i)
	}
	for i, c := range h.covers() {
		t.Cover[i] = terrain.Cover(c)
	}
	return t, nil
}

// payload is a parsed payload header over its checked body.
type payload struct {
	reqEnc     []byte          // canonical encoding of the request
	req        terrain.Request // decoded by decodeRequest
	ne, nw, nc int
	min, max   float32
	data       []byte // 4*ne + 4*nw + nc bytes of samples
}

// parsePayload checks p's checksum and parses its header; the counts
// account for exactly the sample bytes present.
func parsePayload(p []byte) (payload, error) {
	var h payload
	if len(p) < len(payloadMagic)+4 {
		return h, fmt.Errorf("%w: %d bytes", ErrCorrupt, len(p))
	}
	body, sum := p[:len(p)-4], binary.LittleEndian.Uint32(p[len(p)-4:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return h, fmt.Errorf("%w: checksum %08x, stored %08x", ErrCorrupt, got, sum)
	}
	r := reader{b: body}
	if string(r.take(len(payloadMagic))) != payloadMagic {
		return h, fmt.Errorf("%w: bad magic or format version", ErrCorrupt)
	}
	reqEnc := reader{b: r.take(r.u32())}
	h.ne, h.nw, h.nc = r.u32(), r.u32(), r.u32()
	h.min, h.max = math.Float32frombits(uint32(r.fixed(4))), math.Float32frombits(uint32(r.fixed(4)))
	for _, z := range r.take(pad(len(body) - len(r.b))) {
		if z != 0 {
			r.fail("nonzero padding")
		}
	}
	if r.err != nil {
		return h, fmt.Errorf("%w: %w", ErrCorrupt, r.err)
	}
	if want := 4*uint64(h.ne) + 4*uint64(h.nw) + uint64(h.nc); want != uint64(len(r.b)) {
		return h, fmt.Errorf("%w: counts %d+%d+%d need %d bytes, %d present", ErrCorrupt, h.ne, h.nw, h.nc, want, len(r.b))
	}
	h.data = r.b
	h.reqEnc = reqEnc.b
	return h, nil
}

// decodeRequest decodes h.reqEnc into h.req.
func (h *payload) decodeRequest() error {
	r := reader{b: h.reqEnc}
	r.decodeValue(reflect.ValueOf(&h.req).Elem())
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%d trailing bytes after the request", len(r.b))
	}
	if r.err != nil {
		return fmt.Errorf("%w: request: %w", ErrCorrupt, r.err)
	}
	return nil
}

// pad is the number of zero bytes that bring offset to a multiple of 4.
func pad(offset int) int { return (4 - offset%4) % 4 }

// newTile allocates the tile's arrays: one allocation for both float
// arrays, capacities clipped so that appending to one can never overwrite
// the other.
func (h *payload) newTile() *terrain.Tile {
	floats := make([]float32, h.ne+h.nw)
	return &terrain.Tile{
		Request:    h.req,
		Elevations: floats[:h.ne:h.ne],
		Water:      floats[h.ne:],
		Cover:      make([]terrain.Cover, h.nc),
		Min:        h.min,
		Max:        h.max,
	}
}

func (h *payload) bits(i int) uint32   { return binary.LittleEndian.Uint32(h.data[4*i:]) }
func (h *payload) float(i int) float32 { return math.Float32frombits(h.bits(i)) }
func (h *payload) covers() []byte      { return h.data[4*(h.ne+h.nw):] }

// viewTile returns the tile whose arrays are views of the payload's sample
// bytes, without copying them, when this machine is little-endian and the
// samples are 4-byte aligned in memory (the padding aligns them relative to
// the payload, and heap slices start aligned); otherwise it decodes them
// into new arrays.
//
// Design note: a hit used to allocate and fill about as many bytes as the
// store had just read; viewing the payload makes the hit cost one checksum
// pass and one validation pass over memory the caller already owns (Store
// returns slices that belong to the caller, nothing else references them,
// and tiles are immutable once delivered). The rejected alternative, a
// pooled buffer, would need callers to release tiles.
func (h *payload) viewTile() *terrain.Tile {
	floats := 4 * (h.ne + h.nw)
	if !littleEndian || (h.ne+h.nw > 0 && uintptr(unsafe.Pointer(&h.data[0]))%4 != 0) {
		t := h.newTile()
		for i := range t.Elevations {
			t.Elevations[i] = h.float(i)
		}
		for i := range t.Water {
			t.Water[i] = h.float(h.ne + i)
		}
		for i, c := range h.covers() {
			t.Cover[i] = terrain.Cover(c)
		}
		return t
	}
	t := &terrain.Tile{Request: h.req, Min: h.min, Max: h.max}
	if h.ne+h.nw > 0 {
		all := unsafe.Slice((*float32)(unsafe.Pointer(&h.data[0])), h.ne+h.nw)
		t.Elevations, t.Water = all[:h.ne:h.ne], all[h.ne:]
	} else {
		t.Elevations, t.Water = []float32{}, []float32{}
	}
	if h.nc > 0 {
		t.Cover = unsafe.Slice((*terrain.Cover)(unsafe.Pointer(&h.data[floats])), h.nc)
	} else {
		t.Cover = []terrain.Cover{}
	}
	return t
}

var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// decodeChecked is DecodeTile followed by (*terrain.Tile).Validate(req),
// fused: it accepts exactly the payloads that those two accept (a test and
// a fuzz target hold it to that) but reads the samples in place, by their
// bits, without branching on their values. It is the hit path, where
// decoding and validation are the cost of a hit beyond the store's own
// read.
//
// req is a request the archive has validated; for one with a negative
// border, where Validate would index outside the tile, it reports an error.
func decodeChecked(p []byte, req terrain.Request) (*terrain.Tile, error) {
	h, err := parsePayload(p)
	if err != nil {
		return nil, err
	}
	// The encoding is canonical, so equal bytes mean an equal request;
	// comparing them spares decoding on the hit path.
	var buf [256]byte
	if want := appendRequest(buf[:0], req); !bytes.Equal(h.reqEnc, want[4:]) {
		other := h // decoded in a copy, so that h itself stays on the stack
		if err := other.decodeRequest(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: request %v, want %v", terrain.ErrInvalidTile, other.req, req)
	}
	h.req = req
	side, res, b := req.Side(), int(req.Resolution), int(req.Border)
	if h.ne != side*side || h.nw != res*res || h.nc != res*res {
		return nil, fmt.Errorf("%w: %d elevations, %d water and %d cover samples, want %d, %d and %d",
			terrain.ErrInvalidTile, h.ne, h.nw, h.nc, side*side, res*res, res*res)
	}
	if b < 0 {
		return nil, fmt.Errorf("%w: border %d is negative", terrain.ErrInvalidTile, b)
	}
	t := h.viewTile()
	g := grid{side: side, res: res, border: b}
	elev, water := h.data[:4*h.ne], h.data[4*h.ne:4*(h.ne+h.nw)]

	// The checks below read the payload bytes without branching on their
	// values (see the design note on the sample checks); only a payload
	// that fails one is searched again for the sample to report.
	nonFinite := anyNonFiniteBorder(elev, g)
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1)) // of an empty interior, as in Validate
	if res > 0 {
		if interiorMatches(elev, g, t.Min, t.Max) {
			lo, hi = t.Min, t.Max
		} else {
			// Some interior sample is not finite or the stored extrema
			// are wrong or special: measure exactly, to tell which.
			x := measureInterior(elev, g)
			nonFinite = nonFinite || x.nonFinite()
			lo, hi = x.extrema()
		}
	}
	const exponent = 0x7f800000 // all ones: NaN or infinity
	if nonFinite {
		for i, e := range t.Elevations {
			if math.Float32bits(e)&exponent == exponent {
				return nil, fmt.Errorf("%w: elevation %d is %v", terrain.ErrInvalidTile, i, e)
			}
		}
	}
	if anyInfinite(water) {
		for i, w := range t.Water {
			if math.Float32bits(w)&0x7fffffff == exponent {
				return nil, fmt.Errorf("%w: water %d is %v", terrain.ErrInvalidTile, i, w)
			}
		}
	}
	if anyAbove(h.covers(), terrain.NumCovers-1) {
		for i, c := range t.Cover {
			if int(c) >= terrain.NumCovers {
				return nil, fmt.Errorf("%w: cover %d is %d", terrain.ErrInvalidTile, i, c)
			}
		}
	}
	// Validate compares with ==, under which -0 and 0 are equal, so it does
	// not matter which of the two an extremum is.
	if lo != t.Min || hi != t.Max {
		return nil, fmt.Errorf("%w: extrema %v..%v, recomputed %v..%v", terrain.ErrInvalidTile, t.Min, t.Max, lo, hi)
	}
	return t, nil
}

// Verify checks a record completely, as the archive does before trusting
// it, but without knowing which request it answers: the key must parse and
// hash to the record's digest, and the payload must decode (checksum
// included) into a tile that validates against the request in the key.
// It returns the decoded key and tile.
func Verify(r Record) (Key, *terrain.Tile, error) {
	k, err := ParseKey(r.Key)
	if err != nil {
		return Key{}, nil, err
	}
	if DigestOf(r.Key) != r.Digest {
		want := DigestOf(r.Key)
		return k, nil, fmt.Errorf("archive: digest %x does not match the key's digest %x", r.Digest[:8], want[:8])
	}
	t, err := DecodeTile(r.Payload)
	if err != nil {
		return k, nil, err
	}
	if err := t.Validate(k.Request); err != nil {
		return k, nil, err
	}
	return k, t, nil
}

// Design note: the sample checks. A hit checks about 38 KB of samples for
// a typical tile (resolution 64, border 1), and that used to cost several
// times the checksum, which the CPU computes in hardware. Three choices
// make it cheap:
//
//   - Floats are examined as integers. Finite float32 bit patterns with the
//     sign bit clear (from +0 up) order as their bits do, signed or
//     unsigned; those with it set (from -0 down) are negative as signed
//     integers, above every positive one as unsigned integers, and lower
//     floats have greater bits. NaN and the infinities have the greatest
//     bits of either sign. So integer minima and maxima, which the min and
//     max builtins compile to compare-and-move instructions, give the float
//     extrema and reveal any NaN or infinity (see bitExtrema).
//   - The interior is checked against the stored extrema rather than
//     measured: they say which two of three integer extrema decide (the
//     signed minimum and maximum when both are of one sign, the signed and
//     unsigned maxima when they straddle zero; see interiorMatches), and a
//     match also proves every interior sample finite, so the elevations
//     take one pass of two compare-and-moves a sample, and only the border
//     samples need a separate finiteness check. A tile that does not match
//     (invalid, or with a zero extremum and -0 among its samples) is
//     measured exactly, in two such passes.
//   - The loops read words by index with two or four independent
//     accumulators, so that iterations overlap, and never branch on sample
//     values, so that the cost does not depend on the data.
//
// Rejected: float comparisons (one per cycle on common x86 cores, and two
// per sample), the min and max builtins on floats (several instructions
// each, to order NaN and the zeros), mapping each pattern to an ordered
// integer before comparing (more instructions than it saves), three
// integer extrema always (half as many again as the check against the
// stored extrema), and updating the extrema in a branch only when a
// sample exceeds them (no faster on smooth terrain, much slower when the
// updates are unpredictable).

// grid is the layout of a tile's elevations: side×side samples around an
// interior of res×res samples whose first is at (border, border); border
// is not negative.
type grid struct{ side, res, border int }

// at is the index of the first sample of interior row j.
func (g grid) at(j int) int { return (j+g.border)*g.side + g.border }

// anyNonFiniteBorder reports whether any sample of the little-endian
// elevations elev outside the interior is NaN or infinite: the runs before
// the first interior row and after the last, and the 2*border samples
// between consecutive rows (a whole number of words).
func anyNonFiniteBorder(elev []byte, g grid) bool {
	if g.res <= 0 {
		return finiteCheck(elev)&finiteFlags != 0
	}
	first, end := 4*g.at(0), 4*(g.at(g.res-1)+g.res)
	acc := finiteCheck(elev[:first]) | finiteCheck(elev[end:])
	gap := 8 * g.border
	for at := first + 4*g.res; at < end; at += 4 * g.side {
		run := elev[at : at+gap]
		for i := 0; i+8 <= len(run); i += 8 {
			acc |= binary.LittleEndian.Uint64(run[i:])&finiteExponents + finiteOne
		}
	}
	return acc&finiteFlags != 0
}

// interiorMatches reports whether the interior samples of the elevations
// elev (g.res > 0) are all finite with least value lo and greatest hi, as
// Validate compares them (-0 equal to 0). It may return false for a tile
// that does match only if lo or hi is zero and some interior sample is
// -0; the caller then measures exactly.
//
// A zero extremum is taken as +0. If lo and hi are positive or +0, the
// samples match exactly when their signed minimum and maximum are the bits
// of lo and hi: then every sample is positive or +0 and ordered as its
// bits, and none exceeds hi, as NaN and +Inf would. If both are negative
// (not -0), the same holds with the order reversed. If lo is negative and
// hi positive or +0, they match exactly when the signed maximum is hi's
// bits (the greatest sample of sign bit clear, so no NaN or +Inf) and the
// unsigned maximum lo's bits (the most negative sample, so no negative NaN
// or -Inf).
func interiorMatches(elev []byte, g grid, lo, hi float32) bool {
	const sign = 1 << 31
	bits := func(f float32) uint32 {
		if b := math.Float32bits(f); b != sign {
			return b
		}
		return 0 // -0 as +0
	}
	lb, hb := bits(lo), bits(hi)
	if lb&0x7f800000 == 0x7f800000 || hb&0x7f800000 == 0x7f800000 {
		return false
	}
	switch {
	case lb < sign && hb < sign:
		l, h := signedBounds(elev, g)
		return l == int32(lb) && h == int32(hb)
	case lb >= sign && hb >= sign:
		l, h := signedBounds(elev, g)
		return l == int32(hb) && h == int32(lb)
	case lb >= sign:
		s, u := maxima(elev, g)
		return s == int32(hb) && u == lb
	}
	return false // a positive least value above a negative greatest one
}

// measureInterior returns the integer extrema of the interior samples of
// the elevations elev (g.res > 0).
func measureInterior(elev []byte, g grid) bitExtrema {
	var x bitExtrema
	x.minS, x.maxS = signedBounds(elev, g)
	_, x.maxU = maxima(elev, g)
	return x
}

// bitExtrema are the signed maximum and minimum and the unsigned maximum
// of some float32 bit patterns, at least one.
type bitExtrema struct {
	maxS, minS int32
	maxU       uint32
}

// extrema returns the least and greatest of the floats, which must be
// finite: the greatest is the signed maximum if any float is positive,
// else the signed minimum (the negative float nearest zero); the least is
// the unsigned maximum if any float is negative, else the signed minimum.
func (x bitExtrema) extrema() (lo, hi float32) {
	l, h := x.minS, x.maxS
	if x.maxS < 0 { // all negative
		h = x.minS
	}
	if x.maxU >= 1<<31 { // some negative
		l = int32(x.maxU)
	}
	return math.Float32frombits(uint32(l)), math.Float32frombits(uint32(h))
}

// nonFinite reports whether some float is NaN or infinite: those have the
// greatest patterns of either sign, so the signed maximum shows the
// positive ones and the unsigned maximum the negative ones.
func (x bitExtrema) nonFinite() bool {
	return x.maxS >= 0x7f800000 || x.maxU >= 0xff800000
}

// signedBounds returns the least and greatest little-endian interior
// samples of elev (g.res > 0) as signed integers.
func signedBounds(elev []byte, g grid) (lo, hi int32) {
	l0, h0 := int32(math.MaxInt32), int32(math.MinInt32)
	l1, h1 := l0, h0
	for j := range g.res {
		row := elev[4*g.at(j) : 4*(g.at(j)+g.res)]
		i := 0
		for ; i+16 <= len(row); i += 16 {
			q := row[i : i+16 : i+16]
			e := int32(binary.LittleEndian.Uint32(q))
			l0, h0 = min(l0, e), max(h0, e)
			e = int32(binary.LittleEndian.Uint32(q[4:]))
			l1, h1 = min(l1, e), max(h1, e)
			e = int32(binary.LittleEndian.Uint32(q[8:]))
			l0, h0 = min(l0, e), max(h0, e)
			e = int32(binary.LittleEndian.Uint32(q[12:]))
			l1, h1 = min(l1, e), max(h1, e)
		}
		for ; i < len(row); i += 4 {
			e := int32(binary.LittleEndian.Uint32(row[i:]))
			l0, h0 = min(l0, e), max(h0, e)
		}
	}
	return min(l0, l1), max(h0, h1)
}

// maxima returns the greatest little-endian interior sample of elev
// (g.res > 0) as a signed and as an unsigned integer. The unsigned maximum
// is taken over the samples widened to int64: on recent x86 cores a
// conditional move on a signed comparison is one micro-operation, on
// unsigned "above" two.
func maxima(elev []byte, g grid) (s int32, u uint32) {
	s0, u0 := int32(math.MinInt32), int64(0)
	s1, u1 := s0, u0
	for j := range g.res {
		row := elev[4*g.at(j) : 4*(g.at(j)+g.res)]
		i := 0
		for ; i+16 <= len(row); i += 16 {
			q := row[i : i+16 : i+16]
			e := binary.LittleEndian.Uint32(q)
			s0, u0 = max(s0, int32(e)), max(u0, int64(e))
			e = binary.LittleEndian.Uint32(q[4:])
			s1, u1 = max(s1, int32(e)), max(u1, int64(e))
			e = binary.LittleEndian.Uint32(q[8:])
			s0, u0 = max(s0, int32(e)), max(u0, int64(e))
			e = binary.LittleEndian.Uint32(q[12:])
			s1, u1 = max(s1, int32(e)), max(u1, int64(e))
		}
		for ; i < len(row); i += 4 {
			e := binary.LittleEndian.Uint32(row[i:])
			s0, u0 = max(s0, int32(e)), max(u0, int64(e))
		}
	}
	return max(s0, s1), uint32(max(u0, u1))
}

// The constants of finiteCheck, for two lanes.
const (
	finiteExponents = 0x7f8000007f800000
	finiteOne       = 0x0080000000800000 // the lowest exponent bit
	finiteFlags     = 0x8000000080000000 // set in a result for a NaN or an infinity
)

// finiteCheck returns a value with some finiteFlags set if any
// little-endian float32 in p (whose length is a multiple of 4) is NaN or
// infinite, that is has an all-ones exponent. Two lanes at a time: masking
// keeps each lane's exponent, and adding one at its lowest bit carries into
// the lane's top bit exactly when the exponent is all ones; a lane never
// carries into its neighbour.
func finiteCheck(p []byte) uint64 {
	var acc uint64
	i := 0
	for ; i+8 <= len(p); i += 8 {
		acc |= binary.LittleEndian.Uint64(p[i:])&finiteExponents + finiteOne
	}
	if i+4 <= len(p) {
		acc |= uint64(binary.LittleEndian.Uint32(p[i:]))&finiteExponents + finiteOne
	}
	return acc
}

// anyInfinite reports whether any little-endian float32 in p (whose length
// is a multiple of 4) is infinite (NaN is not). Per lane: z is zero exactly
// for an infinity, and z + 0x7fffffff has its top bit set exactly when z is
// not zero (z < 2^31, so no carry leaves the lane); all lanes keep the top
// bit unless some z was zero.
func anyInfinite(p []byte) bool {
	const abs, inf, fill = 0x7fffffff7fffffff, 0x7f8000007f800000, 0x7fffffff7fffffff
	a0, a1, a2, a3 := ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)
	i := 0
	for ; i+32 <= len(p); i += 32 {
		q := p[i : i+32 : i+32]
		a0 &= binary.LittleEndian.Uint64(q)&abs ^ inf + fill
		a1 &= binary.LittleEndian.Uint64(q[8:])&abs ^ inf + fill
		a2 &= binary.LittleEndian.Uint64(q[16:])&abs ^ inf + fill
		a3 &= binary.LittleEndian.Uint64(q[24:])&abs ^ inf + fill
	}
	for ; i+8 <= len(p); i += 8 {
		a0 &= binary.LittleEndian.Uint64(p[i:])&abs ^ inf + fill
	}
	if i+4 <= len(p) {
		z := uint64(binary.LittleEndian.Uint32(p[i:]))&0x7fffffff ^ 0x7f800000
		a0 &= (z + 0x7fffffff) | 0xffffffff00000000
	}
	return a0&a1&a2&a3&0x8000000080000000 != 0x8000000080000000
}

// anyAbove reports whether any byte of p is above limit (limit < 128).
// Per byte: a byte with its top bit clear gets 127-limit added, which sets
// the top bit exactly when it was above limit, without carrying out of the
// byte; a byte with its top bit set is above limit anyway.
func anyAbove(p []byte, limit int) bool {
	const low7 = 0x7f7f7f7f7f7f7f7f
	add := 0x0101010101010101 * uint64(127-limit)
	var a0, a1, a2, a3 uint64
	i := 0
	for ; i+32 <= len(p); i += 32 {
		q := p[i : i+32 : i+32]
		x0, x1 := binary.LittleEndian.Uint64(q), binary.LittleEndian.Uint64(q[8:])
		x2, x3 := binary.LittleEndian.Uint64(q[16:]), binary.LittleEndian.Uint64(q[24:])
		a0 |= (x0&low7 + add) | x0
		a1 |= (x1&low7 + add) | x1
		a2 |= (x2&low7 + add) | x2
		a3 |= (x3&low7 + add) | x3
	}
	for ; i+8 <= len(p); i += 8 {
		x := binary.LittleEndian.Uint64(p[i:])
		a0 |= (x&low7 + add) | x
	}
	for _, c := range p[i:] {
		a0 |= uint64((c&0x7f + byte(127-limit)) | c)
	}
	return (a0|a1|a2|a3)&0x8080808080808080 != 0
}
