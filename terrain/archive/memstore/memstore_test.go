package memstore_test

import (
	"testing"

	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/archivetest"
	"github.com/rtpengine/rtp/terrain/archive/memstore"
)

func TestContract(t *testing.T) {
	archivetest.Run(t, func(t *testing.T, l archive.Limits) archive.Store {
		return memstore.New(l)
	})
}
