package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/rtpengine/rtp/api"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/verify/claims"
)

// A request body is one JSON object whose keys are the fields of a body
// type, spelt exactly (encoding/json would also take "Player" for
// "player"), each at most once. The decoder walks the object's keys with
// json.Decoder.Token and decodes each value into the field the key names,
// so every problem is reported with the field it concerns: an unknown or
// repeated key, a value of the wrong type, a malformed value. Then the body
// type checks the values it holds (required fields, ranges). An empty body
// is the empty object.
//
// Design note: decoding the whole object with DisallowUnknownFields would
// accept keys in any letter case and repeated keys (the last one wins),
// and its type errors name the Go type; walking the keys costs one more
// call per key on bodies of a few fields.
//
// Fast path. That walk costs some 30 allocations and a few microseconds a
// body, on every teleport. So a body is first decoded in one pass by the
// JSON v2 decoder (github.com/go-json-experiment/json, the implementation
// Go ships as encoding/json/v2), which is strict where the walk is: names
// match exactly, a repeated name, an unknown one or invalid UTF-8 is an
// error. A body it takes is the body the walk would have made; anything
// it refuses (or that is not an object) is decoded again from scratch by
// the walk, which alone writes the answer, so a bad body gets the same
// message either way. FuzzDecodeFastPath holds the two to that.

// body is a request body type.
type body interface {
	// field returns a pointer to the field of the JSON key name, or nil
	// for a key the body does not have.
	field(name string) any
	// keys lists the JSON keys of the body.
	keys() []string
	// check reports the first value that is missing or out of range, as
	// a 400 naming its field.
	check() error
}

// decodeBody reads r's body (at most s.opts.MaxBodyBytes) into b and checks
// it. A Content-Type, when present, must be application/json (415
// otherwise); without one the request passed checkRequestShape with the
// X-RTP-Request header. The message does not repeat the header.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, b body) error {
	if present, ok := jsonContentType(r.Header); present && !ok {
		return unsupportedMediaType("the body must be JSON: send Content-Type: application/json (optionally with charset=utf-8)")
	}
	if r.ContentLength > s.opts.MaxBodyBytes {
		return tooLarge(s.opts.MaxBodyBytes)
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return tooLarge(mbe.Limit)
		}
		return badRequest("reading the body: %v", err)
	}
	return decodeJSON(data, b)
}

func tooLarge(limit int64) *apiError {
	return &apiError{status: http.StatusRequestEntityTooLarge, code: CodeTooLarge, msg: fmt.Sprintf("the request body exceeds %d bytes", limit)}
}

// decodeJSON decodes data, one JSON object (or nothing but white space),
// into b and checks it. Every error is a 400 *apiError.
func decodeJSON(data []byte, b body) error {
	if rest := bytes.TrimLeft(data, " \t\r\n"); len(rest) > 0 && rest[0] == '{' {
		if jsonv2.Unmarshal(data, b, jsonv2.RejectUnknownMembers(true)) == nil {
			return b.check()
		}
		// Whatever the fast path set goes: the walk starts afresh.
		reflect.ValueOf(b).Elem().SetZero()
	}
	return decodeWalk(data, b)
}

// decodeWalk is decodeJSON's walk of the keys (see the top of the file).
func decodeWalk(data []byte, b body) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return b.check()
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return syntaxError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return badRequest("body: want a JSON object, got %s", jsonKind(tok))
	}
	var seen []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return syntaxError(err)
		}
		key, ok := tok.(string)
		if !ok { // json.Decoder reports a non-string key as a syntax error
			return badRequest("body: malformed JSON: want a key, got %v", tok)
		}
		dst := b.field(key)
		if dst == nil {
			return unknownField(key, b.keys())
		}
		for _, k := range seen {
			if k == key {
				return badRequest("field %q: given more than once", key)
			}
		}
		seen = append(seen, key)
		if err := dec.Decode(dst); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return badRequest("field %q: want %s, got %s", key, typeName(reflect.TypeOf(dst)), te.Value)
			}
			return syntaxError(err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return syntaxError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("body: data after the JSON object")
	}
	return b.check()
}

// syntaxError describes an error of the JSON syntax.
func syntaxError(err error) *apiError {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return badRequest("body: malformed JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("body: the JSON object is cut short")
	}
	return badRequest("body: malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// unknownField describes a key the body does not have, suggesting the key
// it matches but for letter case.
func unknownField(key string, keys []string) *apiError {
	for _, k := range keys {
		if strings.EqualFold(k, key) {
			return badRequest("field %q: unknown (did you mean %q?)", key, k)
		}
	}
	return badRequest("field %q: unknown; the fields are %s", key, quoteList(keys))
}

func quoteList(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = fmt.Sprintf("%q", k)
	}
	return strings.Join(q, ", ")
}

// typeName names the JSON type that decodes into t.
func typeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		if e := t.Elem(); e.Kind() == reflect.Slice || e.Kind() == reflect.Array {
			return "an array of arrays of " + strings.TrimPrefix(strings.TrimPrefix(typeName(e.Elem()), "a "), "an ") + "s"
		}
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(typeName(t.Elem()), "a "), "an ") + "s"
	}
	return t.String()
}

// jsonKind names the JSON kind of a token.
func jsonKind(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		return string(v)
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

// checkName checks a player name: 1 to MaxPlayerLen characters of valid
// UTF-8, no control characters. what names it in the message.
func checkName(what, v string) error {
	n := utf8.RuneCountInString(v)
	switch {
	case v == "":
		return badRequest("%s: empty; want 1 to %d characters", what, MaxPlayerLen)
	case !utf8.ValidString(v):
		return badRequest("%s: not valid UTF-8", what)
	case n > MaxPlayerLen:
		return badRequest("%s: %d characters; want at most %d", what, n, MaxPlayerLen)
	case strings.IndexFunc(v, unicode.IsControl) >= 0:
		return badRequest("%s: holds a control character", what)
	}
	return nil
}

// teleportBody decodes an api.TeleportRequest.
type teleportBody api.TeleportRequest

func (b *teleportBody) field(name string) any {
	switch name {
	case "player":
		return &b.Player
	case "sink":
		return &b.Sink
	case "token":
		return &b.Token
	case "waitMs":
		return &b.WaitMs
	}
	return nil
}

func (b *teleportBody) keys() []string { return []string{"player", "sink", "token", "waitMs"} }

func (b *teleportBody) check() error {
	if b.Player == nil {
		return badRequest("field \"player\": required")
	}
	if err := checkName(`field "player"`, *b.Player); err != nil {
		return err
	}
	return checkWait(b.WaitMs)
}

// groupTeleportBody decodes an api.GroupTeleportRequest.
type groupTeleportBody api.GroupTeleportRequest

func (b *groupTeleportBody) field(name string) any {
	switch name {
	case "players":
		return &b.Players
	case "waitMs":
		return &b.WaitMs
	}
	return nil
}

func (b *groupTeleportBody) keys() []string { return []string{"players", "waitMs"} }

func (b *groupTeleportBody) check() error {
	switch {
	case b.Players == nil:
		return badRequest("field \"players\": required")
	case len(b.Players) == 0:
		return badRequest("field \"players\": empty; want 1 to %d players", MaxGroupPlayers)
	case len(b.Players) > MaxGroupPlayers:
		return badRequest("field \"players\": %d players; want at most %d", len(b.Players), MaxGroupPlayers)
	}
	for i, p := range b.Players {
		if err := checkName(fmt.Sprintf("field \"players\": element %d", i), p); err != nil {
			return err
		}
		for j, q := range b.Players[:i] {
			if q == p {
				return badRequest("field \"players\": element %d names %q again (element %d)", i, p, j)
			}
		}
	}
	return checkWait(b.WaitMs)
}

// checkWait checks a body's waitMs.
func checkWait(ms *int64) error {
	if ms != nil && (*ms < 0 || *ms > MaxWait.Milliseconds()) {
		return badRequest("field \"waitMs\": %d is outside 0..%d", *ms, MaxWait.Milliseconds())
	}
	return nil
}

// queueBody decodes an api.QueueRequest.
type queueBody api.QueueRequest

func (b *queueBody) field(name string) any {
	if name == "capacity" {
		return &b.Capacity
	}
	return nil
}

func (b *queueBody) keys() []string { return []string{"capacity"} }

func (b *queueBody) check() error {
	if b.Capacity != nil && (*b.Capacity < 0 || *b.Capacity > math.MaxInt32) {
		return badRequest("field \"capacity\": %d is outside 0..%d", *b.Capacity, math.MaxInt32)
	}
	return nil
}

// reserveBody decodes an api.ReservationRequest.
type reserveBody api.ReservationRequest

func (b *reserveBody) field(name string) any {
	switch name {
	case "token":
		return &b.Token
	case "waitMs":
		return &b.WaitMs
	}
	return nil
}

func (b *reserveBody) keys() []string { return []string{"token", "waitMs"} }

func (b *reserveBody) check() error { return checkWait(b.WaitMs) }

// claimBody decodes an api.ClaimRequest.
type claimBody api.ClaimRequest

func (b *claimBody) field(name string) any {
	switch name {
	case "owner":
		return &b.Owner
	case "minX":
		return &b.MinX
	case "minZ":
		return &b.MinZ
	case "maxX":
		return &b.MaxX
	case "maxZ":
		return &b.MaxZ
	}
	return nil
}

func (b *claimBody) keys() []string { return []string{"owner", "minX", "minZ", "maxX", "maxZ"} }

func (b *claimBody) check() error {
	if b.Owner == nil {
		return badRequest("field \"owner\": required")
	}
	switch o := *b.Owner; {
	case o == "":
		return badRequest("field \"owner\": empty")
	case len(o) > claims.MaxNameBytes:
		return badRequest("field \"owner\": %d bytes; want at most %d", len(o), claims.MaxNameBytes)
	case !utf8.ValidString(o):
		return badRequest("field \"owner\": not valid UTF-8")
	}
	for _, c := range []struct {
		key string
		v   *int64
	}{{"minX", b.MinX}, {"minZ", b.MinZ}, {"maxX", b.MaxX}, {"maxZ", b.MaxZ}} {
		if c.v == nil {
			return badRequest("field %q: required", c.key)
		}
	}
	if *b.MinX > *b.MaxX {
		return badRequest("field \"minX\": %d exceeds maxX %d", *b.MinX, *b.MaxX)
	}
	if *b.MinZ > *b.MaxZ {
		return badRequest("field \"minZ\": %d exceeds maxZ %d", *b.MinZ, *b.MaxZ)
	}
	return nil
}

// changesBody decodes an api.ChangesRequest.
type changesBody api.ChangesRequest

func (b *changesBody) field(name string) any {
	if name == "chunks" {
		return &b.Chunks
	}
	return nil
}

func (b *changesBody) keys() []string { return []string{"chunks"} }

func (b *changesBody) check() error {
	if b.Chunks == nil {
		return badRequest("field \"chunks\": required")
	}
	if len(b.Chunks) > engine.MaxChangedChunks {
		return badRequest("field \"chunks\": %d chunks; want at most %d", len(b.Chunks), engine.MaxChangedChunks)
	}
	for i, c := range b.Chunks {
		if len(c) != 2 {
			return badRequest("field \"chunks\": element %d: want [x, z], got %d numbers", i, len(c))
		}
		for _, v := range c {
			if v < -maxChunkCoord || v > maxChunkCoord {
				return badRequest("field \"chunks\": element %d: coordinate %d beyond +-%d", i, v, maxChunkCoord)
			}
		}
	}
	return nil
}

// maxChunkCoord bounds a chunk coordinate of a changes body: Minecraft's
// world border (30 million blocks) in chunks, with room to spare.
const maxChunkCoord = 1 << 21
