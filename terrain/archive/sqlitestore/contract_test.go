package sqlitestore

import (
	"path/filepath"
	"testing"

	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/archivetest"
)

func TestContract(t *testing.T) {
	archivetest.Run(t, func(t *testing.T, l archive.Limits) archive.Store {
		s, err := Open(t.Context(), filepath.Join(t.TempDir(), "archive.db"), Options{Limits: l})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
