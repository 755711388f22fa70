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
// fused into one pass over the samples: it accepts exactly the payloads
// that those two accept (a test and a fuzz target hold it to that), but
// reads every sample once and tests floats by their bits. It is the hit
// path, where decoding and validation are the cost of a hit beyond the
// store's own read.
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
	t := h.viewTile()
	const exponent = 0x7f800000 // all ones: NaN or infinity
	// The sample checks run over the payload bytes eight at a time without
	// branches (see anyNonFinite, anyInfinite, anyAbove); only a payload
	// that fails one is searched again for the sample to report.
	elev, water := h.data[:4*h.ne], h.data[4*h.ne:4*(h.ne+h.nw)]
	if anyNonFinite(elev) {
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
	// Validate takes the extrema with the min and max builtins, which also
	// order NaN and the zeros; every elevation is finite here and the
	// extrema are only compared with ==, under which -0 and 0 are equal, so
	// plain comparisons accept exactly the same tiles, faster.
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	for j := b; j < b+res; j++ {
		for _, e := range t.Elevations[j*side+b : j*side+b+res] {
			if e < lo {
				lo = e
			}
			if e > hi {
				hi = e
			}
		}
	}
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

// anyNonFinite reports whether any little-endian float32 in p (whose length
// is a multiple of 4) is NaN or infinite, that is has an all-ones exponent.
// Two lanes at a time: masking keeps each lane's exponent, and adding one
// at its lowest bit carries into the lane's top bit exactly when the
// exponent is all ones; a lane never carries into its neighbour.
func anyNonFinite(p []byte) bool {
	var acc uint64
	for ; len(p) >= 8; p = p[8:] {
		acc |= binary.LittleEndian.Uint64(p)&0x7f8000007f800000 + 0x0080000000800000
	}
	if len(p) >= 4 {
		acc |= uint64(binary.LittleEndian.Uint32(p))&0x7f800000 + 0x00800000
	}
	return acc&0x8000000080000000 != 0
}

// anyInfinite reports whether any little-endian float32 in p (whose length
// is a multiple of 4) is infinite (NaN is not). Per lane: z is zero exactly
// for an infinity, and z + 0x7fffffff has its top bit set exactly when z is
// not zero (z < 2^31, so no carry leaves the lane); all lanes keep the top
// bit unless some z was zero.
func anyInfinite(p []byte) bool {
	acc := ^uint64(0)
	for ; len(p) >= 8; p = p[8:] {
		z := binary.LittleEndian.Uint64(p)&0x7fffffff7fffffff ^ 0x7f8000007f800000
		acc &= z + 0x7fffffff7fffffff
	}
	if len(p) >= 4 {
		z := uint64(binary.LittleEndian.Uint32(p))&0x7fffffff ^ 0x7f800000
		acc &= (z + 0x7fffffff) | 0xffffffff00000000
	}
	return acc&0x8000000080000000 != 0x8000000080000000
}

// anyAbove reports whether any byte of p is above limit (limit < 128).
// Per byte: a byte with its top bit clear gets 127-limit added, which sets
// the top bit exactly when it was above limit, without carrying out of the
// byte; a byte with its top bit set is above limit anyway.
func anyAbove(p []byte, limit int) bool {
	add := 0x0101010101010101 * uint64(127-limit)
	var acc uint64
	for ; len(p) >= 8; p = p[8:] {
		x := binary.LittleEndian.Uint64(p)
		acc |= (x&0x7f7f7f7f7f7f7f7f + add) | x
	}
	for _, c := range p {
		acc |= uint64((c&0x7f + byte(127-limit)) | c)
	}
	return acc&0x8080808080808080 != 0
}
