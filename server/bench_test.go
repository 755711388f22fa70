package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkHandlerTeleport measures the server's own cost of a teleport:
// routing, metrics, body decoding and the JSON answer, over a fake engine
// that answers at once, in process (no network).
func BenchmarkHandlerTeleport(b *testing.B) {
	s, err := New(&fakeEngine{}, Options{Logger: quietLogger(), Claims: &memClaims{}})
	if err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	body := `{"player":"alice","waitMs":2000}`
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/v1/regions/r/teleports", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("teleport = %d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkHandlerComplete measures a completion, the other request of
// every teleport.
func BenchmarkHandlerComplete(b *testing.B) {
	s, err := New(&fakeEngine{}, Options{Logger: quietLogger(), Token: testToken, Claims: &memClaims{}})
	if err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/v1/teleports/12345/complete", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set(HeaderRequest, "1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusNoContent {
			b.Fatalf("complete = %d %s", rec.Code, rec.Body)
		}
	}
}
