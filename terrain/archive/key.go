package archive

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"unsafe"

	"github.com/rtpengine/rtp/terrain"
)

// Canonical value encoding.
//
// Identity must change whenever any input changes, including a field added
// to terrain.Request or to a source's parameter struct, without anyone
// keeping a list of key fields. So values are encoded by reflection and the
// encoding is self-describing: every value starts with a kind tag, structs
// carry their field count and every field's name, strings and sequences are
// length-prefixed, numbers have the fixed width of their Go kind
// (little-endian; floats by their IEEE bits, so -0 and 0 differ and no value
// is rounded). Maps (no canonical order), pointers, interfaces, functions,
// channels, complex numbers and unsafe pointers are rejected when the type
// is first seen, so an unsupported field is an error at Wrap time rather
// than a silent alias. Unexported fields are encoded too: a field that
// changes the output cannot be left out by accident.
//
// Rejected alternatives: encoding/gob and encoding/json are not canonical
// (gob emits type ids in first-use order, json sorts nothing for structs but
// rounds-trips floats through decimal and skips unexported fields); a
// hand-written encoder per struct is the hand-kept list this avoids.

// Kind tags of the value encoding. The numbers are part of the stored
// format: never renumber them.
const (
	tagBool    = 1
	tagInt     = 2 // Go int, encoded as 8 bytes
	tagInt8    = 3
	tagInt16   = 4
	tagInt32   = 5
	tagInt64   = 6
	tagUint    = 7 // Go uint, encoded as 8 bytes
	tagUint8   = 8
	tagUint16  = 9
	tagUint32  = 10
	tagUint64  = 11
	tagFloat32 = 12
	tagFloat64 = 13
	tagString  = 14
	tagArray   = 15
	tagSlice   = 16
	tagStruct  = 17
)

var kindTags = map[reflect.Kind]byte{
	reflect.Bool: tagBool, reflect.Int: tagInt, reflect.Int8: tagInt8, reflect.Int16: tagInt16,
	reflect.Int32: tagInt32, reflect.Int64: tagInt64, reflect.Uint: tagUint, reflect.Uint8: tagUint8,
	reflect.Uint16: tagUint16, reflect.Uint32: tagUint32, reflect.Uint64: tagUint64,
	reflect.Float32: tagFloat32, reflect.Float64: tagFloat64, reflect.String: tagString,
	reflect.Array: tagArray, reflect.Slice: tagSlice, reflect.Struct: tagStruct,
}

// width is the encoded size of a fixed-width kind's value, 0 for the others.
func width(k reflect.Kind) int {
	switch k {
	case reflect.Bool, reflect.Int8, reflect.Uint8:
		return 1
	case reflect.Int16, reflect.Uint16:
		return 2
	case reflect.Int32, reflect.Uint32, reflect.Float32:
		return 4
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64, reflect.Float64:
		return 8
	}
	return 0
}

// checkType reports every field of t (named by path) that the canonical
// encoding cannot represent.
func checkType(t reflect.Type, path string) error {
	switch t.Kind() {
	case reflect.Struct:
		var errs []error
		for i := range t.NumField() {
			f := t.Field(i)
			errs = append(errs, checkType(f.Type, path+"."+f.Name))
		}
		return errors.Join(errs...)
	case reflect.Array, reflect.Slice:
		return checkType(t.Elem(), path+"[]")
	}
	if _, ok := kindTags[t.Kind()]; !ok {
		return fmt.Errorf("archive: %s has kind %s, which has no canonical encoding (use a value of a bool, number, string, array, slice or struct type)", path, t.Kind())
	}
	return nil
}

func appendU32(b []byte, n int) []byte { return binary.LittleEndian.AppendUint32(b, uint32(n)) }

// appendValue appends the canonical encoding of v, whose type passed
// checkType.
func appendValue(b []byte, v reflect.Value) []byte {
	k := v.Kind()
	b = append(b, kindTags[k])
	switch k {
	case reflect.Bool:
		if v.Bool() {
			return append(b, 1)
		}
		return append(b, 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return appendFixed(b, uint64(v.Int()), width(k))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return appendFixed(b, v.Uint(), width(k))
	case reflect.Float32:
		return binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(v.Float())))
	case reflect.Float64:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Float()))
	case reflect.String:
		s := v.String()
		b = appendU32(b, len(s))
		return append(b, s...)
	case reflect.Array, reflect.Slice:
		n := v.Len()
		b = appendU32(b, n)
		for i := range n {
			b = appendValue(b, v.Index(i))
		}
		return b
	case reflect.Struct:
		t := v.Type()
		b = appendU32(b, t.NumField())
		for i := range t.NumField() {
			name := t.Field(i).Name
			b = appendU32(b, len(name))
			b = append(b, name...)
			b = appendValue(b, v.Field(i))
		}
		return b
	}
	panic("archive: appendValue of unchecked kind " + k.String()) // unreachable after checkType
}

func appendFixed(b []byte, x uint64, w int) []byte {
	for i := range w {
		b = append(b, byte(x>>(8*i)))
	}
	return b
}

var errShort = errors.New("archive: encoding truncated")

// reader consumes an encoding; every read is bounds-checked.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = errShort
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) u8() byte {
	if p := r.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader) u32() int {
	if p := r.take(4); p != nil {
		return int(binary.LittleEndian.Uint32(p))
	}
	return 0
}

func (r *reader) fixed(w int) uint64 {
	p := r.take(w)
	var x uint64
	for i, c := range p {
		x |= uint64(c) << (8 * i)
	}
	return x
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("archive: "+format, args...)
	}
}

// decodeValue decodes into v (settable) an encoding written by appendValue
// for a value of v's exact type: kinds, field counts and field names must
// match. Allocation is bounded by the input length: a length prefix is
// checked against the remaining bytes before anything is allocated.
func (r *reader) decodeValue(v reflect.Value) {
	k := v.Kind()
	if tag := r.u8(); r.err == nil && tag != kindTags[k] {
		r.fail("kind tag %d where %s (%d) was expected", tag, k, kindTags[k])
	}
	if r.err != nil {
		return
	}
	switch k {
	case reflect.Bool:
		switch c := r.u8(); c {
		case 0, 1:
			v.SetBool(c == 1)
		default:
			r.fail("bool byte %d", c)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		w := width(k)
		x := r.fixed(w)
		sh := 64 - 8*uint(w)
		v.SetInt(int64(x<<sh) >> sh) // sign-extend
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(r.fixed(width(k)))
	case reflect.Float32:
		v.SetFloat(float64(math.Float32frombits(uint32(r.fixed(4)))))
	case reflect.Float64:
		v.SetFloat(math.Float64frombits(r.fixed(8)))
	case reflect.String:
		v.SetString(string(r.take(r.u32())))
	case reflect.Array:
		if n := r.u32(); r.err == nil && n != v.Len() {
			r.fail("array of %d elements where %d were expected", n, v.Len())
		}
		for i := 0; i < v.Len() && r.err == nil; i++ {
			r.decodeValue(v.Index(i))
		}
	case reflect.Slice:
		n := r.u32()
		if r.err == nil && n > len(r.b) { // every element takes at least one byte
			r.err = errShort
		}
		if r.err != nil {
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := 0; i < n && r.err == nil; i++ {
			r.decodeValue(v.Index(i))
		}
	case reflect.Struct:
		t := v.Type()
		if n := r.u32(); r.err == nil && n != t.NumField() {
			r.fail("%s with %d fields where %d were expected", t, n, t.NumField())
		}
		for i := 0; i < t.NumField() && r.err == nil; i++ {
			name := r.take(r.u32())
			if r.err == nil && string(name) != t.Field(i).Name {
				r.fail("field %q where %s.%s was expected", name, t, t.Field(i).Name)
			}
			r.decodeValue(v.Field(i))
		}
	default:
		r.fail("cannot decode kind %s", k)
	}
}

// The record key layout: keyMagic, then four length-prefixed (uint32 LE)
// parts: producer name, producer version, the canonical encoding of the
// source's parameters, the canonical encoding of the terrain.Request.
const keyMagic = "rtp/archive/key/1\n"

var requestType = reflect.TypeFor[terrain.Request]()

func init() {
	if err := checkType(requestType, "terrain.Request"); err != nil {
		panic(err) // a field of a kind the key cannot hold was added to terrain.Request
	}
}

// keyPrefix returns the part of every key that depends only on the source:
// magic, producer and parameters.
func keyPrefix(p terrain.Producer, params any) ([]byte, error) {
	var errs []error
	if p.Name == "" {
		errs = append(errs, errors.New("archive: source producer has an empty name"))
	}
	if p.Version == "" {
		errs = append(errs, errors.New("archive: source producer has an empty version"))
	}
	pv := reflect.ValueOf(params)
	switch {
	case !pv.IsValid():
		errs = append(errs, errors.New("archive: source Params() returned nil; it must return a struct value"))
	case pv.Kind() != reflect.Struct:
		errs = append(errs, fmt.Errorf("archive: source Params() returned a %s (%s); it must return a struct value", pv.Kind(), pv.Type()))
	default:
		errs = append(errs, checkType(pv.Type(), pv.Type().String()))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	b := []byte(keyMagic)
	b = appendU32(b, len(p.Name))
	b = append(b, p.Name...)
	b = appendU32(b, len(p.Version))
	b = append(b, p.Version...)
	enc := appendValue(nil, pv)
	b = appendU32(b, len(enc))
	return append(b, enc...), nil
}

// appendRequest appends the length-prefixed request part of a key: the
// canonical encoding of req, written through requestPlan when the request
// has only fixed-width fields (no allocation, on every lookup's path).
func appendRequest(b []byte, req terrain.Request) []byte {
	at := len(b)
	b = append(b, 0, 0, 0, 0)
	if requestPlan == nil {
		b = appendValue(b, reflect.ValueOf(req))
	} else {
		b = append(b, tagStruct)
		b = appendU32(b, len(requestPlan))
		base := unsafe.Pointer(&req)
		for _, f := range requestPlan {
			b = append(b, f.head...)
			p := unsafe.Add(base, f.offset)
			var x uint64
			switch f.width {
			case 1:
				x = uint64(*(*uint8)(p))
			case 2:
				x = uint64(*(*uint16)(p))
			case 4:
				x = uint64(*(*uint32)(p))
			case 8:
				x = *(*uint64)(p)
			}
			b = appendFixed(b, x, f.width)
		}
	}
	binary.LittleEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

// planField encodes one fixed-width field of terrain.Request: head is its
// name's length prefix, the name and the value's kind tag; the value is
// width bytes read at offset. Reading a field's raw bytes gives the same
// encoding appendValue writes: ints in two's complement, floats by their
// bits, bools as 0 or 1 (TestRequestPlanMatchesReflection holds them equal).
type planField struct {
	head   []byte
	offset uintptr
	width  int
}

// requestPlan is derived from terrain.Request's type at start-up, so a new
// field joins the key without anyone editing a list. It is nil when a
// field is not fixed-width (appendRequest then uses reflection).
var requestPlan = func() []planField {
	var plan []planField
	for i := range requestType.NumField() {
		f := requestType.Field(i)
		w := width(f.Type.Kind())
		if w == 0 || f.Type.Size() != uintptr(w) {
			return nil
		}
		head := appendU32(nil, len(f.Name))
		head = append(head, f.Name...)
		head = append(head, kindTags[f.Type.Kind()])
		plan = append(plan, planField{head: head, offset: f.Offset, width: w})
	}
	return plan
}()

// EncodeKey returns the full canonical key of req produced by a source with
// producer p and parameters params (a struct value, as Source.Params
// returns). Its SHA-256 is the record's Digest.
func EncodeKey(p terrain.Producer, params any, req terrain.Request) ([]byte, error) {
	b, err := keyPrefix(p, params)
	if err != nil {
		return nil, err
	}
	return appendRequest(b, req), nil
}

// DigestOf returns the digest under which a record with this key is stored.
func DigestOf(key []byte) Digest { return sha256.Sum256(key) }

// Key is a decoded record key.
type Key struct {
	Producer terrain.Producer
	Params   []byte // canonical encoding of the source's parameters
	Request  terrain.Request
}

// ParseKey decodes a key written by EncodeKey. It fails on any other bytes,
// including keys written when terrain.Request had other fields.
func ParseKey(key []byte) (Key, error) {
	r := reader{b: key}
	if string(r.take(len(keyMagic))) != keyMagic {
		return Key{}, errors.New("archive: not a record key (bad magic)")
	}
	var k Key
	k.Producer.Name = string(r.take(r.u32()))
	k.Producer.Version = string(r.take(r.u32()))
	k.Params = r.take(r.u32())
	reqEnc := reader{b: r.take(r.u32())}
	if r.err != nil {
		return Key{}, fmt.Errorf("archive: record key: %w", r.err)
	}
	if len(r.b) != 0 {
		return Key{}, fmt.Errorf("archive: record key: %d trailing bytes", len(r.b))
	}
	reqEnc.decodeValue(reflect.ValueOf(&k.Request).Elem())
	if reqEnc.err == nil && len(reqEnc.b) != 0 {
		reqEnc.err = fmt.Errorf("archive: %d trailing bytes after the request", len(reqEnc.b))
	}
	if reqEnc.err != nil {
		return Key{}, fmt.Errorf("archive: record key request: %w", reqEnc.err)
	}
	k.Params = append([]byte(nil), k.Params...)
	return k, nil
}
