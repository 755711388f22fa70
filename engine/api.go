package engine

import (
	"context"
	"io"
	"time"
)

// More reasons a call fails, in Error.Reason (see also teleport.go).
const (
	// ReasonNoSink: the region does not have the sink the call needs
	// (login, network or personal not enabled).
	ReasonNoSink = "sink-disabled"
	// ReasonInvalid: an argument is invalid (an empty player name, a
	// negative capacity); Err says which.
	ReasonInvalid = "invalid"
	// ReasonInvalidToken: a network token not minted under the secret.
	ReasonInvalidToken = "invalid-token"
	// ReasonUnknownToken: no lease for the network token.
	ReasonUnknownToken = "unknown-token"
	// ReasonRedeemed: the network token was redeemed already.
	ReasonRedeemed = "token-redeemed"
	// ReasonLeaseExpired: the network token's lease expired.
	ReasonLeaseExpired = "lease-expired"
	// ReasonPaused: the region's scan is paused and nothing is ready.
	ReasonPaused = "paused"
	// ReasonRestartNeeded: Reload was given a change it cannot apply to a
	// running engine; Err lists the changes.
	ReasonRestartNeeded = "restart-needed"
)

// Reservation is a network reservation: the token that holds it, the
// location leased to it and when the lease ends.
type Reservation struct {
	Token    string    `json:"token"`
	Location Location  `json:"location"`
	Expires  time.Time `json:"expires"`
}

// Latency summarizes the durations of the teleports served since start.
// The quantiles and the buckets are read from one histogram, so they agree.
// The zero value is an empty summary; a Latency is comparable.
type Latency struct {
	Count uint64        `json:"count"`
	P50   time.Duration `json:"p50"`
	P90   time.Duration `json:"p90"`
	P99   time.Duration `json:"p99"`
	Max   time.Duration `json:"max"`
	// Sum is the total of the recorded durations.
	Sum time.Duration `json:"-"`
	// Buckets is the cumulative distribution: Buckets[i] counts the
	// durations below LatencyBound(i). It is exact (the bounds are bucket
	// edges of the underlying histogram) and is what a metrics exporter
	// publishes as a histogram.
	Buckets [LatencyBuckets]uint64 `json:"-"`
}

// Engine methods of the service API: the signatures are the contract the
// HTTP server is written against.
var _ interface {
	Teleport(ctx context.Context, region string, req Request) (Location, error)
	Complete(id uint64) error
	Cancel(id uint64) error
	Join(region, player string) error
	Quit(region, player string) error
	OpenQueue(region, player string, capacity int) error
	CloseQueue(region, player string) error
	Reserve(region, token string) (Reservation, error)
	ReserveWait(ctx context.Context, region, token string, wait time.Duration, done <-chan struct{}) (Reservation, error)
	Redeem(region, token string) (Location, error)
	Release(region, token string) error
	Stats(region string) (Stats, error)
	Regions() []string
	ScanReset(ctx context.Context, region string) error
	ScanPause(region string) error
	ScanResume(region string) error
	ExportMemory(region string, w io.Writer) error
	Reload(ctx context.Context, spec Spec) error
	Ready() error
} = (*Engine)(nil)
