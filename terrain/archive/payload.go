package archive

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"reflect"

	"github.com/rtpengine/rtp/terrain"
)

// The payload layout (all numbers little-endian):
//
//	"RTPT" 1                       magic and format version (5 bytes)
//	u32 n, request[n]              canonical encoding of the tile's Request
//	u32 elevations, u32 water, u32 covers   sample counts
//	f32 min, f32 max               extrema, by their bits
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
	n := len(payloadMagic) + 4 + 64 + 12 + 8 + 4*len(t.Elevations) + 4*len(t.Water) + len(t.Cover) + 4
	b := make([]byte, 0, n)
	b = append(b, payloadMagic...)
	b = appendRequest(b, t.Request)
	b = appendU32(b, len(t.Elevations))
	b = appendU32(b, len(t.Water))
	b = appendU32(b, len(t.Cover))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(t.Min))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(t.Max))
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
	if len(p) < len(payloadMagic)+4 {
		return nil, fmt.Errorf("%w: %d bytes", ErrCorrupt, len(p))
	}
	body, sum := p[:len(p)-4], binary.LittleEndian.Uint32(p[len(p)-4:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return nil, fmt.Errorf("%w: checksum %08x, stored %08x", ErrCorrupt, got, sum)
	}
	r := reader{b: body}
	if string(r.take(len(payloadMagic))) != payloadMagic {
		return nil, fmt.Errorf("%w: bad magic or format version", ErrCorrupt)
	}
	reqEnc := reader{b: r.take(r.u32())}
	ne, nw, nc := r.u32(), r.u32(), r.u32()
	lo, hi := r.fixed(4), r.fixed(4)
	if r.err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, r.err)
	}
	if want := 4*uint64(ne) + 4*uint64(nw) + uint64(nc); want != uint64(len(r.b)) {
		return nil, fmt.Errorf("%w: counts %d+%d+%d need %d bytes, %d present", ErrCorrupt, ne, nw, nc, want, len(r.b))
	}
	t := &terrain.Tile{Min: math.Float32frombits(uint32(lo)), Max: math.Float32frombits(uint32(hi))}
	reqEnc.decodeValue(reflect.ValueOf(&t.Request).Elem())
	if reqEnc.err == nil && len(reqEnc.b) != 0 {
		reqEnc.err = fmt.Errorf("%d trailing bytes after the request", len(reqEnc.b))
	}
	if reqEnc.err != nil {
		return nil, fmt.Errorf("%w: request: %w", ErrCorrupt, reqEnc.err)
	}
	// One allocation for both float arrays; capacities are clipped so that
	// appending to one can never overwrite the other.
	floats := make([]float32, ne+nw)
	data := r.b
	for i := range floats {
		floats[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	t.Elevations = floats[:ne:ne]
	t.Water = floats[ne:]
	t.Cover = make([]terrain.Cover, nc)
	for i, c := range data[4*(ne+nw):] {
		t.Cover[i] = terrain.Cover(c)
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
		return k, nil, fmt.Errorf("archive: digest %x.. does not match the key's %x..", r.Digest[:6], want[:6])
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
