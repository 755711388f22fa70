package lease

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

var sampleLeases = []Lease{
	{},
	{World: "world", X: 1, Y: 64, Z: -1, Index: 7, Owner: "node-a"},
	{World: "ネザー", X: math.MinInt64, Y: math.MaxInt64, Z: math.MinInt64, Index: math.MaxInt64},
	{World: strings.Repeat("w", MaxNameLen), Owner: strings.Repeat("o", MaxNameLen)},
}

func TestCodecRoundTrip(t *testing.T) {
	for _, l := range sampleLeases {
		b, err := l.MarshalBinary()
		if err != nil {
			t.Fatalf("MarshalBinary(%+v): %v", l, err)
		}
		var got Lease
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("UnmarshalBinary(MarshalBinary(%+v)): %v", l, err)
		}
		if got != l {
			t.Errorf("round trip: got %+v, want %+v", got, l)
		}
	}
}

func TestCodecLayout(t *testing.T) {
	b, err := Lease{World: "w", X: 1, Y: -1, Z: 64, Index: 0, Owner: "n"}.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{codecVersion, 1, 'w', 2, 1, 0x80, 0x01, 0, 1, 'n'}
	if !bytes.Equal(b, want) {
		t.Errorf("encoding = %x, want %x", b, want)
	}
}

func TestCodecRefuses(t *testing.T) {
	good, _ := Lease{World: "w", X: 5, Owner: "n"}.MarshalBinary()
	for name, b := range map[string][]byte{
		"empty":           nil,
		"version":         append([]byte{2}, good[1:]...),
		"truncated":       good[:len(good)-1],
		"trailing":        append(bytes.Clone(good), 0),
		"overlong name":   {codecVersion, 0x81, 0x00, 'w', 0, 0, 0, 0, 0},
		"overlong int":    {codecVersion, 0, 0x80, 0x00, 0, 0, 0, 0},
		"name too long":   append([]byte{codecVersion, 0x80, 0x02}, make([]byte, 256+5)...),
		"name past end":   {codecVersion, 9, 'w'},
		"varint overflow": {codecVersion, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0, 0, 0},
	} {
		l := Lease{World: "keep"}
		err := l.UnmarshalBinary(b)
		if !errors.Is(err, errCodec) {
			t.Errorf("%s: UnmarshalBinary(%x) = %v, want a codec error", name, b, err)
		}
		if l != (Lease{World: "keep"}) {
			t.Errorf("%s: failed UnmarshalBinary changed the lease to %+v", name, l)
		}
	}
	if _, err := (Lease{World: strings.Repeat("w", MaxNameLen+1)}).MarshalBinary(); !errors.Is(err, ErrInvalid) {
		t.Errorf("MarshalBinary of an overlong world = %v, want ErrInvalid", err)
	}
}

func FuzzUnmarshalBinary(f *testing.F) {
	for _, l := range sampleLeases {
		b, _ := l.MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte{codecVersion, 0x80, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		var l Lease
		if err := l.UnmarshalBinary(b); err != nil {
			return
		}
		// Accepted input is the one canonical encoding of what it decodes to.
		again, err := l.MarshalBinary()
		if err != nil {
			t.Fatalf("MarshalBinary of a decoded lease: %v", err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("decoded %x to %+v, which encodes to %x", b, l, again)
		}
	})
}
