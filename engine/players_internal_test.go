package engine

import (
	"errors"
	"fmt"
	"testing"

	"github.com/rtpengine/rtp/pipeline"
)

// TestNetworkErrorLeaseStore: a failure of the lease store is
// ReasonLeasesUnavailable, with the store's error kept.
func TestNetworkErrorLeaseStore(t *testing.T) {
	cause := errors.New("dial tcp 127.0.0.1:1: connection refused")
	err := networkError("r", fmt.Errorf("%w: %w", pipeline.ErrLeaseStore, cause))
	var ee *Error
	if !errors.As(err, &ee) || ee.Reason != ReasonLeasesUnavailable || ee.Sink != SinkNetwork || !errors.Is(err, cause) {
		t.Fatalf("networkError = %#v, want ReasonLeasesUnavailable of the network sink wrapping the cause", err)
	}
	if err := networkError("r", pipeline.ErrRedeemed); !errors.As(err, &ee) || ee.Reason != ReasonRedeemed {
		t.Fatalf("networkError(ErrRedeemed) = %v, want ReasonRedeemed", err)
	}
}
