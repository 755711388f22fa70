package server

import (
	"fmt"
	"strings"
	"testing"
)

// TestChanges checks POST /v1/worlds/{world}/changes: a valid body reaches
// the engine with every chunk, in order; a malformed one is refused
// before it, naming the problem; a body past the size bound is 413 (the
// admin token is checked by TestAuth, as for every route).
func TestChanges(t *testing.T) {
	f, s := newFakeServer(t, Options{MaxBodyBytes: 64 << 10})
	h := specChecked(t, s.Handler())
	const path = "/v1/worlds/w/changes"

	a := do(t, h, "POST", path, `{"chunks":[[1,-2],[3,4],[1,-2]]}`)
	if a.status != 200 {
		t.Fatalf("valid body = %d %s", a.status, a.body)
	}
	if got, want := f.lastCall(), "ChunksChanged w [chunk(1, -2) chunk(3, 4) chunk(1, -2)]"; got != want {
		t.Fatalf("engine call %q, want %q", got, want)
	}
	if !strings.Contains(string(a.body), `"chunks":3`) {
		t.Fatalf("answer %s does not report the engine's count", a.body)
	}

	calls := f.callCount()
	for _, tc := range []struct{ name, body, msgHas string }{
		{"missing", `{}`, `field "chunks": required`},
		{"null", `{"chunks":null}`, `field "chunks": required`},
		{"one number", `{"chunks":[[1]]}`, "element 0: want [x, z]"},
		{"three numbers", `{"chunks":[[1,2],[1,2,3]]}`, "element 1: want [x, z]"},
		{"fraction", `{"chunks":[[1.5,2]]}`, `field "chunks": want an array of arrays of integers`},
		{"string", `{"chunks":[["1",2]]}`, `field "chunks"`},
		{"not a list", `{"chunks":{"x":1}}`, `field "chunks"`},
		{"far away", `{"chunks":[[0,9999999]]}`, "beyond"},
		{"unknown field", `{"chunks":[],"blocks":[]}`, `"blocks"`},
	} {
		a := do(t, h, "POST", path, tc.body)
		checkErrorAnswer(t, tc.name, a, 400, CodeBadRequest)
		if !strings.Contains(a.errMessage(), tc.msgHas) {
			t.Errorf("%s: message %s does not say %q", tc.name, a.body, tc.msgHas)
		}
	}
	var b strings.Builder
	b.WriteString(`{"chunks":[`)
	for i := range 4097 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "[%d,0]", i)
	}
	b.WriteString("]}")
	checkErrorAnswer(t, "too many chunks", do(t, h, "POST", path, b.String()), 400, CodeBadRequest)
	if f.callCount() != calls {
		t.Fatalf("a refused body reached the engine (%d calls, want %d)", f.callCount(), calls)
	}
	checkErrorAnswer(t, "past the size bound", do(t, h, "POST", path, `{"chunks":[`+strings.Repeat("[1,2],", 20000)+`[1,2]]}`), 413, CodeTooLarge)
}

func FuzzChangesBody(f *testing.F) {
	for _, s := range []string{
		`{"chunks":[[1,-2],[3,4]]}`, `{"chunks":[]}`, `{"chunks":null}`, `{}`, ``, `{"chunks":[[1]]}`,
		`{"chunks":[[1,2,3]]}`, `{"chunks":[[2097153,0]]}`, `{"chunks":[[1.5,0]]}`, `{"chunks":[{"x":1,"z":2}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var b changesBody
		err := decodeJSON(data, &b)
		checkDecodeResult(t, data, err)
		if err != nil {
			return
		}
		if b.Chunks == nil || len(b.Chunks) > 4096 {
			t.Fatalf("decodeJSON(%q) accepted %d chunks (nil %v)", data, len(b.Chunks), b.Chunks == nil)
		}
		for _, c := range b.Chunks {
			if len(c) != 2 || c[0] < -maxChunkCoord || c[0] > maxChunkCoord || c[1] < -maxChunkCoord || c[1] > maxChunkCoord {
				t.Fatalf("decodeJSON(%q) accepted chunk %v", data, c)
			}
		}
	})
}
