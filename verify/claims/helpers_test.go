package claims_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/rtpengine/rtp/verify/claims"
	"github.com/rtpengine/rtp/verify/claims/claimstest"
	"github.com/rtpengine/rtp/verify/claims/sqliteclaims"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var rect = claimstest.Rect

// open opens the SQLite store at path with opts, closed at cleanup: the
// tests of the index and the verifier need a store, whatever its back
// end.
func open(t testing.TB, path string, opts claims.Options) *claims.Store {
	t.Helper()
	s, err := sqliteclaims.Open(context.Background(), path, sqliteclaims.Options{Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
