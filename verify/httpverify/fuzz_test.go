package httpverify

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeAnswer: decodeAnswer never panics, and it answers exactly when
// the body is a JSON object whose "allowed" member is a boolean, with that
// boolean (checked by decoding the body another way).
func FuzzDecodeAnswer(f *testing.F) {
	for _, seed := range []string{
		`{"allowed": true}`, `{"allowed": false}`, `{"allowed": true, "reason": "x"}`,
		`{"allowed": null}`, `{"allowed": "true"}`, `{"allowed": 1}`, `{"Allowed": true}`,
		`{"allowed": true, "allowed": false}`, `[true]`, `null`, ``, `{"allowed": tr`,
		`{"allowed": true} x`, ` {"allowed":false} `, `<html>oops</html>`, "{\"allowed\": true, \"\xff\": 1}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeAnswer(data)
		var obj map[string]any
		want, isBool := false, false
		if json.Unmarshal(data, &obj) == nil && obj != nil {
			want, isBool = obj["allowed"].(bool)
		}
		if (err == nil) != isBool {
			t.Fatalf("decodeAnswer(%q) = %v, %v; want an answer: %v", data, got, err, isBool)
		}
		if err == nil && got != want {
			t.Fatalf("decodeAnswer(%q) = %v, want %v", data, got, want)
		}
	})
}
