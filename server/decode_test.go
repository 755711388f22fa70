package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// teleportSeeds are bodies of POST .../teleports, good and bad.
var teleportSeeds = []string{
	``, `{}`, `{"player":"alice"}`, `{"player":"alice","sink":"login","token":"t","waitMs":0}`,
	`{"player":"alice","waitMs":30000}`, `{"player":"alice","waitMs":30001}`, `{"player":null}`,
	`{"player":"a","player":"b"}`, `{"Player":"a"}`, `{"player":1}`, `{"player":"a","waitMs":1e3}`,
	`{"player":"a"}x`, `[1,2]`, `"x"`, `{"player":"a",}`, `{"player"}`, `{`, `}`, `{"a":{"b":[1,{"c":null}]}}`,
	`{"player":"\ud800"}`, "{\"player\":\"\xff\"}", `{"player":"a","waitMs":-0}`, `{"player":"a","waitMs":9223372036854775808}`,
}

// checkDecodeResult checks the outcome of decodeJSON: a 400 *apiError
// naming something, or a body whose checks hold.
func checkDecodeResult(t *testing.T, data []byte, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var ae *apiError
	if !errors.As(err, &ae) || ae.status != 400 || ae.code != CodeBadRequest {
		t.Fatalf("decodeJSON(%q) = %v, want a 400 bad-request", data, err)
	}
	if !strings.HasPrefix(ae.msg, "field ") && !strings.HasPrefix(ae.msg, "body: ") {
		t.Fatalf("decodeJSON(%q) message %q names neither a field nor the body", data, ae.msg)
	}
}

func TestDecodeTeleport(t *testing.T) {
	for _, tc := range []struct {
		body    string
		wantErr string // "" for success
		player  string
		waitMs  int64 // -1: absent
	}{
		{`{"player":"alice"}`, "", "alice", -1},
		{`{"player":"alice","waitMs":0}`, "", "alice", 0},
		{`{"player":"bob","sink":"s","token":"t","waitMs":30000}`, "", "bob", 30000},
		{`{"player":"a","sink":null}`, "", "a", -1},
		{``, `field "player": required`, "", 0},
		{`{"player":null}`, `field "player": required`, "", 0},
		{`{"player":"a","waitMs":30001}`, `field "waitMs": 30001 is outside 0..30000`, "", 0},
		{`{"player":"a","waitMs":1e3}`, `field "waitMs": want an integer, got number 1e3`, "", 0},
		{`{"player":"a","waitMs":9223372036854775808}`, `field "waitMs": want an integer`, "", 0},
		{`{"player":true}`, `field "player": want a string, got bool`, "", 0},
		{`{"player":"a","extra":{}}`, `field "extra": unknown; the fields are "player", "sink", "token", "waitMs"`, "", 0},
		{`{"WAITMS":1}`, `did you mean "waitMs"`, "", 0},
		{`{"player":"a","player":"a"}`, `field "player": given more than once`, "", 0},
		{`{"player":"a",}`, `body: malformed JSON`, "", 0},
		{`{"player":"a"} {"player":"b"}`, `body: data after the JSON object`, "", 0},
		{`{"player":"a"`, `body: the JSON object is cut short`, "", 0},
		{`[]`, `body: want a JSON object, got an array`, "", 0},
		{`42`, `body: want a JSON object, got a number`, "", 0},
	} {
		var b teleportBody
		err := decodeJSON([]byte(tc.body), &b)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("decodeJSON(%s) = %v, want an error with %q", tc.body, err, tc.wantErr)
			}
			checkDecodeResult(t, []byte(tc.body), err)
			continue
		}
		if err != nil {
			t.Errorf("decodeJSON(%s) = %v", tc.body, err)
			continue
		}
		got := int64(-1)
		if b.WaitMs != nil {
			got = *b.WaitMs
		}
		if *b.Player != tc.player || got != tc.waitMs {
			t.Errorf("decodeJSON(%s) = player %q waitMs %d, want %q %d", tc.body, *b.Player, got, tc.player, tc.waitMs)
		}
	}
}

// groupSeeds are bodies of POST .../group-teleports, good and bad.
var groupSeeds = []string{
	``, `{}`, `{"players":["a"]}`, `{"players":["a","b"],"waitMs":0}`, `{"players":[]}`, `{"players":null}`,
	`{"players":["a","a"]}`, `{"players":["a",""]}`, `{"players":"a"}`, `{"players":[1]}`, `{"players":["a"],"player":"b"}`,
	`{"players":["a"],"waitMs":30001}`, `{"players":["\ud800"]}`, `{"players":[["a"]]}`,
	`{"players":["` + strings.Repeat("x", 65) + `"]}`,
}

func TestDecodeGroupTeleport(t *testing.T) {
	many := make([]string, 65)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprint("p", i))
	}
	for _, tc := range []struct {
		body    string
		wantErr string // "" for success
		players []string
	}{
		{`{"players":["alice","bob"]}`, "", []string{"alice", "bob"}},
		{`{"players":["alice"],"waitMs":500}`, "", []string{"alice"}},
		{`{"players":[` + strings.Join(many[:64], ",") + `]}`, "", nil},
		{``, `field "players": required`, nil},
		{`{"players":null}`, `field "players": required`, nil},
		{`{"players":[]}`, `field "players": empty`, nil},
		{`{"players":[` + strings.Join(many, ",") + `]}`, `field "players": 65 players; want at most 64`, nil},
		{`{"players":["a","b","a"]}`, `field "players": element 2 names "a" again (element 0)`, nil},
		{`{"players":["a",""]}`, `field "players": element 1: empty`, nil},
		{`{"players":["a\u0007"]}`, `field "players": element 0: holds a control character`, nil},
		{`{"players":"a"}`, `field "players": want an array of strings`, nil},
		{`{"players":["a"],"player":"b"}`, `field "player": unknown; the fields are "players", "waitMs"`, nil},
		{`{"players":["a"],"waitMs":-1}`, `field "waitMs": -1 is outside 0..30000`, nil},
	} {
		var b groupTeleportBody
		err := decodeJSON([]byte(tc.body), &b)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("decodeJSON(%s) = %v, want an error with %q", tc.body, err, tc.wantErr)
			}
			checkDecodeResult(t, []byte(tc.body), err)
			continue
		}
		if err != nil {
			t.Errorf("decodeJSON(%s) = %v", tc.body, err)
			continue
		}
		if tc.players != nil && !slices.Equal(b.Players, tc.players) {
			t.Errorf("decodeJSON(%s) = players %q, want %q", tc.body, b.Players, tc.players)
		}
	}
}

func FuzzGroupTeleportBody(f *testing.F) {
	for _, s := range groupSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var b groupTeleportBody
		err := decodeJSON(data, &b)
		checkDecodeResult(t, data, err)
		if err != nil {
			return
		}
		if len(b.Players) == 0 || len(b.Players) > MaxGroupPlayers {
			t.Fatalf("decodeJSON(%q) accepted %d players", data, len(b.Players))
		}
		seen := map[string]bool{}
		for _, p := range b.Players {
			if p == "" || utf8.RuneCountInString(p) > MaxPlayerLen || !utf8.ValidString(p) || seen[p] {
				t.Fatalf("decodeJSON(%q) accepted player %q", data, p)
			}
			seen[p] = true
		}
		if b.WaitMs != nil && (*b.WaitMs < 0 || *b.WaitMs > 30000) {
			t.Fatalf("decodeJSON(%q) accepted waitMs %d", data, *b.WaitMs)
		}
	})
}

func TestDecodeClaim(t *testing.T) {
	var b claimBody
	if err := decodeJSON([]byte(`{"owner":"town","minX":-5,"minZ":-6,"maxX":7,"maxZ":8}`), &b); err != nil {
		t.Fatal(err)
	}
	if *b.Owner != "town" || *b.MinX != -5 || *b.MinZ != -6 || *b.MaxX != 7 || *b.MaxZ != 8 {
		t.Errorf("claim decoded as %q %d %d %d %d", *b.Owner, *b.MinX, *b.MinZ, *b.MaxX, *b.MaxZ)
	}
	for body, want := range map[string]string{
		`{"minX":0,"minZ":0,"maxX":0,"maxZ":0}`:                 `field "owner": required`,
		`{"owner":"","minX":0,"minZ":0,"maxX":0,"maxZ":0}`:      `field "owner": empty`,
		`{"owner":"o","minX":0,"maxX":0,"maxZ":0}`:              `field "minZ": required`,
		`{"owner":"o","minX":0,"minZ":3,"maxX":0,"maxZ":2}`:     `field "minZ": 3 exceeds maxZ 2`,
		`{"owner":"o","minX":0.5,"minZ":0,"maxX":0,"maxZ":0}`:   `field "minX": want an integer`,
		`{"owner":"` + strings.Repeat("o", 257) + `","minX":0}`: `field "owner": 257 bytes`,
	} {
		var b claimBody
		err := decodeJSON([]byte(body), &b)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("decodeJSON(%s) = %v, want %q", body, err, want)
		}
	}
}

func FuzzTeleportBody(f *testing.F) {
	for _, s := range teleportSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var b teleportBody
		err := decodeJSON(data, &b)
		checkDecodeResult(t, data, err)
		if err != nil {
			return
		}
		if b.Player == nil || *b.Player == "" || utf8.RuneCountInString(*b.Player) > MaxPlayerLen || !utf8.ValidString(*b.Player) {
			t.Fatalf("decodeJSON(%q) accepted player %v", data, b.Player)
		}
		if b.WaitMs != nil && (*b.WaitMs < 0 || *b.WaitMs > 30000) {
			t.Fatalf("decodeJSON(%q) accepted waitMs %d", data, *b.WaitMs)
		}
		// What was accepted is one JSON object.
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("decodeJSON(%q) accepted what encoding/json refuses: %v", data, err)
		}
	})
}

func FuzzClaimBody(f *testing.F) {
	for _, s := range []string{
		`{"owner":"o","minX":0,"minZ":0,"maxX":1,"maxZ":1}`, `{"owner":"o"}`, `{"owner":"o","minX":2,"minZ":0,"maxX":1,"maxZ":1}`,
		`{"owner":"o","minX":-9223372036854775808,"minZ":0,"maxX":9223372036854775807,"maxZ":1}`, `{}`, ``, `{"owner":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var b claimBody
		err := decodeJSON(data, &b)
		checkDecodeResult(t, data, err)
		if err == nil && (b.Owner == nil || *b.Owner == "" || *b.MinX > *b.MaxX || *b.MinZ > *b.MaxZ) {
			t.Fatalf("decodeJSON(%q) accepted an invalid claim", data)
		}
	})
}

func FuzzQueueBody(f *testing.F) {
	for _, s := range []string{`{"capacity":1}`, `{"capacity":-1}`, `{}`, ``, `{"capacity":2147483648}`, `{"capacity":"1"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var b queueBody
		err := decodeJSON(data, &b)
		checkDecodeResult(t, data, err)
		if err == nil && b.Capacity != nil && (*b.Capacity < 0 || *b.Capacity > 1<<31-1) {
			t.Fatalf("decodeJSON(%q) accepted capacity %d", data, *b.Capacity)
		}
	})
}

func FuzzReserveBody(f *testing.F) {
	for _, s := range []string{`{"token":"abc"}`, `{}`, ``, `{"token":null}`, `{"token":1}`, `{"tok":"x"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var b reserveBody
		checkDecodeResult(t, data, decodeJSON(data, &b))
	})
}

// FuzzTeleportRequest sends fuzzed bodies through the whole handler: the
// answer is a 200 or a 400 with a JSON error body, never a panic or 500.
func FuzzTeleportRequest(f *testing.F) {
	for _, s := range teleportSeeds {
		f.Add(s)
	}
	// A claims store in memory: the route does not use it.
	s, err := New(&fakeEngine{}, Options{Logger: quietLogger(), MaxBodyBytes: 4096, Claims: &memClaims{}})
	if err != nil {
		f.Fatal(err)
	}
	h := s.Handler()
	f.Fuzz(func(t *testing.T, body string) {
		a := do(t, h, "POST", "/v1/regions/r/teleports", body)
		switch a.status {
		case 200:
		case 400:
			if a.errCode() != CodeBadRequest {
				t.Fatalf("body %q: 400 with %s", body, a.body)
			}
		case 413:
			if len(body) <= 4096 {
				t.Fatalf("body %q of %d bytes: 413", body, len(body))
			}
		default:
			t.Fatalf("body %q: %d %s", body, a.status, a.body)
		}
	})
}

// FuzzDecodeFastPath holds decodeJSON's one-pass decoder to the walk of
// the keys: a body the fast path takes must be one the walk takes too,
// with the same values, for every body type (see the top of decode.go).
func FuzzDecodeFastPath(f *testing.F) {
	for _, s := range append(slices.Clone(teleportSeeds), groupSeeds...) {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"owner":"town","minX":-5,"minZ":-6,"maxX":7,"maxZ":8}`, `{"capacity":3}`, `{"capacity":null}`,
		"\v{\"player\":\"a\"}", `{"pl\u0061yer":"a"}`, `{"player":"a","waitMs":5.0}`, `{"player":"a","waitMs":"5"}`,
		`{"owner":"o","minX":0,"minZ":0,"maxX":0,"maxZ":0,"MinX":1}`, ` {"player":"a"} `, `{"player":"\u00e9"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, mk := range []func() body{
			func() body { return new(teleportBody) },
			func() body { return new(claimBody) },
			func() body { return new(queueBody) },
			func() body { return new(reserveBody) },
			func() body { return new(groupTeleportBody) },
		} {
			fast, walk := mk(), mk()
			ferr := decodeJSON(data, fast)
			werr := decodeWalk(data, walk)
			if (ferr == nil) != (werr == nil) || (ferr != nil && ferr.Error() != werr.Error()) {
				t.Fatalf("%T: decodeJSON(%q) = %v, the walk = %v", fast, data, ferr, werr)
			}
			if ferr == nil && !reflect.DeepEqual(fast, walk) {
				t.Fatalf("%T: decodeJSON(%q) = %+v, the walk = %+v", fast, data, fast, walk)
			}
		}
	})
}

// TestDecodeFastPathNames: each body type's JSON names, as the fast path
// reads them from the struct tags, are exactly the keys the walk knows,
// so the two decoders take the same fields.
func TestDecodeFastPathNames(t *testing.T) {
	for _, b := range []body{new(teleportBody), new(claimBody), new(queueBody), new(reserveBody), new(groupTeleportBody)} {
		typ := reflect.TypeOf(b).Elem()
		var names []string
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				t.Fatalf("%v.%s has no JSON name: the fast path would take its Go name", typ, typ.Field(i).Name)
			}
			names = append(names, name)
		}
		if !slices.Equal(names, b.keys()) {
			t.Errorf("%v: JSON names %q, keys %q", typ, names, b.keys())
		}
		for _, k := range b.keys() {
			if b.field(k) == nil {
				t.Errorf("%v: key %q has no field", typ, k)
			}
		}
	}
}
