package anvil

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/bits"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/pierrec/lz4/v4"
)

// Compression schemes of a chunk payload (the byte after its length).
const (
	CompressionGzip = 1
	CompressionZlib = 2
	CompressionNone = 3
	// CompressionLZ4 is lz4-java's LZ4BlockOutputStream format (1.20.5+).
	CompressionLZ4 = 4
	// CompressionCustom names a scheme by a string; not supported.
	CompressionCustom = 127
	// externalFlag set on the scheme byte means the payload lives in the
	// chunk's own c.<x>.<z>.mcc file beside the region file.
	externalFlag = 0x80
)

// DefaultMaxChunkBytes caps a chunk's decompressed size (a chunk is well
// under 1 MiB in practice).
const DefaultMaxChunkBytes = 16 << 20

// Decompress appends the decompressed payload of the given scheme to
// dst[:0] and returns it. It fails with ErrCorrupt when the payload is
// malformed or decompresses to more than limit bytes, and never allocates
// more than limit (plus slack) whatever the payload claims.
func Decompress(scheme byte, payload, dst []byte, limit int) ([]byte, error) {
	switch scheme {
	case CompressionZlib:
		// The zlib wrapper is two header bytes, a deflate stream and an
		// Adler-32 trailer. The trailer is not checked: the game reads a
		// chunk only as far as its NBT goes and never sees it (so real
		// files carry chunks whose trailer is missing), and skipping it
		// saves a tenth of the decompression time.
		if len(payload) < 2 {
			return nil, corrupt("zlib: %d bytes", len(payload))
		}
		cmf, flg := payload[0], payload[1]
		if cmf&0x0f != 8 || cmf>>4 > 7 || (uint(cmf)<<8|uint(flg))%31 != 0 {
			return nil, corrupt("zlib: bad header %#x %#x", cmf, flg)
		}
		if flg&0x20 != 0 {
			return nil, corrupt("zlib: preset dictionaries are not supported")
		}
		z := zlibPool.Get().(*zlibReader)
		defer zlibPool.Put(z)
		z.src.Reset(payload[2:])
		if z.r == nil {
			z.r = flate.NewReader(&z.src)
		} else if err := z.r.(flate.Resetter).Reset(&z.src, nil); err != nil {
			return nil, corrupt("zlib: %v", err)
		}
		return readLimit(z.r, dst, limit, "zlib")
	case CompressionGzip:
		g := gzipPool.Get().(*gzipReader)
		defer gzipPool.Put(g)
		g.src.Reset(payload)
		if err := g.r.Reset(&g.src); err != nil {
			return nil, corrupt("gzip: %v", err)
		}
		g.r.Multistream(false)
		return readLimit(&g.r, dst, limit, "gzip")
	case CompressionNone:
		if len(payload) > limit {
			return nil, corrupt("chunk of %d bytes exceeds the limit of %d", len(payload), limit)
		}
		return append(dst[:0], payload...), nil
	case CompressionLZ4:
		return unLZ4Blocks(payload, dst[:0], limit)
	case CompressionCustom:
		return nil, corrupt("custom chunk compression is not supported")
	}
	return nil, corrupt("unknown chunk compression %d", scheme)
}

type zlibReader struct {
	src bytes.Reader
	r   io.ReadCloser
}

type gzipReader struct {
	src bytes.Reader
	r   gzip.Reader
}

var (
	zlibPool = sync.Pool{New: func() any { return new(zlibReader) }}
	gzipPool = sync.Pool{New: func() any { return new(gzipReader) }}
)

// readLimit reads r to its end into dst[:0], failing past limit bytes.
func readLimit(r io.Reader, dst []byte, limit int, what string) ([]byte, error) {
	dst = dst[:0]
	for {
		if len(dst) == cap(dst) {
			if len(dst) > limit {
				return nil, corrupt("chunk exceeds the limit of %d bytes", limit)
			}
			// Grow by doubling, to at most limit+1 so overflow shows.
			nb := make([]byte, len(dst), min(max(2*cap(dst), 64<<10), limit+1))
			copy(nb, dst)
			dst = nb
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if err == io.EOF || err == io.ErrUnexpectedEOF && len(dst) > 0 {
			// A stream cut short after its data is accepted: the game reads
			// only as far as the NBT goes and never sees the missing end
			// (real files have such chunks); the NBT walk catches data
			// that is truly truncated.
			if len(dst) > limit {
				return nil, corrupt("chunk exceeds the limit of %d bytes", limit)
			}
			return dst, nil
		}
		if err != nil {
			return nil, corrupt("%s: %v", what, err)
		}
	}
}

// The LZ4 block stream of lz4-java: a sequence of blocks, each
//
//	"LZ4Block" | token | compressed length | original length | checksum
//
// (lengths and checksum little-endian int32), then the block's bytes. The
// token's high nibble is the method (0x10 stored, 0x20 LZ4 block), its low
// nibble the level: blocks hold at most 1<<(10+level) bytes. The checksum is
// XXH32 of the original bytes with seed 0x9747b28c, masked to 28 bits. A
// block with both lengths 0 ends the stream.
const (
	lz4Magic      = "LZ4Block"
	lz4HeaderLen  = len(lz4Magic) + 13
	lz4MethodRaw  = 0x10
	lz4MethodLZ4  = 0x20
	lz4Seed       = 0x9747b28c
	lz4CheckMask  = 0x0fffffff
	lz4LevelShift = 10
)

func unLZ4Blocks(src, dst []byte, limit int) ([]byte, error) {
	for {
		if len(src) < lz4HeaderLen {
			return nil, corrupt("lz4: stream ended without its end block")
		}
		if string(src[:len(lz4Magic)]) != lz4Magic {
			return nil, corrupt("lz4: bad block magic")
		}
		token := src[len(lz4Magic)]
		method, level := token&0xf0, int(token&0x0f)
		clen := int(int32(binary.LittleEndian.Uint32(src[9:])))
		olen := int(int32(binary.LittleEndian.Uint32(src[13:])))
		check := binary.LittleEndian.Uint32(src[17:])
		src = src[lz4HeaderLen:]
		if olen == 0 && clen == 0 {
			return dst, nil
		}
		if clen < 0 || olen < 0 || olen > 1<<(lz4LevelShift+level) || clen > len(src) {
			return nil, corrupt("lz4: bad block lengths %d/%d", clen, olen)
		}
		if olen > limit-len(dst) {
			return nil, corrupt("chunk exceeds the limit of %d bytes", limit)
		}
		n := len(dst)
		dst = growLen(dst, olen)
		out := dst[n:]
		switch method {
		case lz4MethodRaw:
			if clen != olen {
				return nil, corrupt("lz4: stored block lengths %d/%d differ", clen, olen)
			}
			copy(out, src[:clen])
		case lz4MethodLZ4:
			got, err := lz4.UncompressBlock(src[:clen], out)
			if err != nil || got != olen {
				return nil, corrupt("lz4: block does not decompress to %d bytes", olen)
			}
		default:
			return nil, corrupt("lz4: unknown block method %#x", method)
		}
		if xxh32(out, lz4Seed)&lz4CheckMask != check {
			return nil, corrupt("lz4: block checksum mismatch")
		}
		src = src[clen:]
	}
}

// growLen extends b by n bytes.
func growLen(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), max(2*cap(b), len(b)+n))
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// XXH32, as lz4-java checks blocks with it.
const (
	xxPrime1 uint32 = 2654435761
	xxPrime2 uint32 = 2246822519
	xxPrime3 uint32 = 3266489917
	xxPrime4 uint32 = 668265263
	xxPrime5 uint32 = 374761393
)

func xxh32(b []byte, seed uint32) uint32 {
	n := len(b)
	var h uint32
	if n >= 16 {
		v1 := seed + xxPrime1 + xxPrime2
		v2 := seed + xxPrime2
		v3 := seed
		v4 := seed - xxPrime1
		for len(b) >= 16 {
			v1 = xxRound(v1, binary.LittleEndian.Uint32(b))
			v2 = xxRound(v2, binary.LittleEndian.Uint32(b[4:]))
			v3 = xxRound(v3, binary.LittleEndian.Uint32(b[8:]))
			v4 = xxRound(v4, binary.LittleEndian.Uint32(b[12:]))
			b = b[16:]
		}
		h = bits.RotateLeft32(v1, 1) + bits.RotateLeft32(v2, 7) + bits.RotateLeft32(v3, 12) + bits.RotateLeft32(v4, 18)
	} else {
		h = seed + xxPrime5
	}
	h += uint32(n)
	for len(b) >= 4 {
		h += binary.LittleEndian.Uint32(b) * xxPrime3
		h = bits.RotateLeft32(h, 17) * xxPrime4
		b = b[4:]
	}
	for _, c := range b {
		h += uint32(c) * xxPrime5
		h = bits.RotateLeft32(h, 11) * xxPrime1
	}
	h ^= h >> 15
	h *= xxPrime2
	h ^= h >> 13
	h *= xxPrime3
	h ^= h >> 16
	return h
}

func xxRound(acc, in uint32) uint32 {
	return bits.RotateLeft32(acc+in*xxPrime2, 13) * xxPrime1
}
