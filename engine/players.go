package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	leasetoken "github.com/rtpengine/rtp/lease/token"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/stage"
)

// ReasonInternal: an unexpected error of a part of the engine; Err holds
// it.
const ReasonInternal = "internal"

// ReasonLeasesUnavailable: the network lease store (the one a fleet shares,
// FleetSpec.LeasesURL, or a single node's in its locations database)
// could not be reached or failed, so a network call
// could not be decided; Err holds the store's error. Nothing was handed
// out, and the token is not used up unless the store had redeemed it
// before the failure (a retry then says ReasonRedeemed). Retrying later
// may succeed: an HTTP server answers it as unavailable (503).
const ReasonLeasesUnavailable = "leases-unavailable"

// regionFor returns the region of that name, or the *Error of a call that
// cannot run: unknown region, shutdown.
func (e *Engine) regionFor(region, sink string) (*Region, error) {
	r := e.regions[region]
	if r == nil {
		return nil, &Error{Region: region, Sink: sink, Reason: ReasonUnknownRegion}
	}
	if e.stopped() {
		return nil, &Error{Region: region, Sink: sink, Reason: ReasonShutdown}
	}
	return r, nil
}

// playerRegion is regionFor plus the check of the player's name.
func (e *Engine) playerRegion(region, sink, player string) (*Region, error) {
	r, err := e.regionFor(region, sink)
	if err != nil {
		return nil, err
	}
	if err := checkPlayer(player); err != nil {
		return nil, &Error{Region: region, Sink: sink, Reason: ReasonInvalid, Err: err}
	}
	return r, nil
}

// Join records a player joining the server: the login reserve shrinks by
// one slot. It fails with ReasonNoSink when the region has no login sink.
func (e *Engine) Join(region, player string) error {
	r, err := e.playerRegion(region, SinkLogin, player)
	if err != nil {
		return err
	}
	l := r.pipe.Login()
	if l == nil {
		return &Error{Region: region, Sink: SinkLogin, Reason: ReasonNoSink}
	}
	l.OnJoin()
	return nil
}

// Quit records a player leaving the server: the login reserve gets the
// slot back (refilled on a later pulse), and the player's personal queue,
// if open, is closed (its locations' reservations with it). It fails with
// ReasonNoSink when the region has neither a login nor a personal sink.
func (e *Engine) Quit(region, player string) error {
	r, err := e.playerRegion(region, SinkLogin, player)
	if err != nil {
		return err
	}
	l, ps := r.pipe.Login(), r.pipe.Personal()
	if l == nil && ps == nil {
		return &Error{Region: region, Sink: SinkLogin, Reason: ReasonNoSink}
	}
	if l != nil {
		l.OnQuit()
	}
	if ps != nil {
		ps.Close(player)
	}
	return nil
}

// OpenQueue opens the player's personal queue with room for capacity
// locations (0: the region's sinks.personal.capacity). The pipeline fills
// it on the next pulses; Teleport serves the player from it first.
// Opening an open queue keeps its capacity. It fails with ReasonNoSink
// when the region has no personal sink and ReasonInvalid for a negative
// or too large capacity.
func (e *Engine) OpenQueue(region, player string, capacity int) error {
	r, err := e.playerRegion(region, SinkPersonal, player)
	if err != nil {
		return err
	}
	ps := r.pipe.Personal()
	if ps == nil {
		return &Error{Region: region, Sink: SinkPersonal, Reason: ReasonNoSink}
	}
	if capacity < 0 || capacity > stage.MaxCapacity {
		return &Error{Region: region, Sink: SinkPersonal, Reason: ReasonInvalid,
			Err: fmt.Errorf("capacity %d: want 0 (the default) to %d", capacity, stage.MaxCapacity)}
	}
	if err := ps.Open(player, capacity); err != nil {
		return &Error{Region: region, Sink: SinkPersonal, Reason: ReasonInvalid, Err: err}
	}
	return nil
}

// CloseQueue closes the player's personal queue, closing the reservations
// of the locations it holds. Closing a queue that is not open does
// nothing. It fails with ReasonNoSink when the region has no personal
// sink.
func (e *Engine) CloseQueue(region, player string) error {
	r, err := e.playerRegion(region, SinkPersonal, player)
	if err != nil {
		return err
	}
	ps := r.pipe.Personal()
	if ps == nil {
		return &Error{Region: region, Sink: SinkPersonal, Reason: ReasonNoSink}
	}
	ps.Close(player)
	return nil
}

// networkSink returns the region's network sink, or the *Error of a call
// that cannot use one.
func (e *Engine) networkSink(region string) (*Region, *pipeline.NetworkSink, error) {
	r, err := e.regionFor(region, SinkNetwork)
	if err != nil {
		return nil, nil, err
	}
	n := r.pipe.Network()
	if n == nil {
		return nil, nil, &Error{Region: region, Sink: SinkNetwork, Reason: ReasonNoSink}
	}
	return r, n, nil
}

// networkError maps an error of the network sink to its *Error.
func networkError(region string, err error) error {
	reason := ReasonInternal
	switch {
	case errors.Is(err, pipeline.ErrInvalidToken):
		reason = ReasonInvalidToken
	case errors.Is(err, pipeline.ErrUnknownToken):
		reason = ReasonUnknownToken
	case errors.Is(err, pipeline.ErrRedeemed):
		reason = ReasonRedeemed
	case errors.Is(err, pipeline.ErrLeaseExpired):
		reason = ReasonLeaseExpired
	case errors.Is(err, pipeline.ErrMiss):
		reason = ReasonNoLocation
	case errors.Is(err, pipeline.ErrLeaseStore):
		reason = ReasonLeasesUnavailable
	}
	return &Error{Region: region, Sink: SinkNetwork, Reason: reason, Err: err}
}

// Reserve leases a ready location of the region's network sink to token
// ("" mints a new one) for a player about to move to this server; the
// destination redeems it (Redeem, or Teleport with Token) when the player
// arrives. Reserve is idempotent: a token holding a lease gets the same
// location back. Expires is the lease's end computed at this call (the
// clock plus sinks.network.lease): for a token that already held its lease,
// the lease ends earlier, when the first Reserve said.
//
// It does not wait: with nothing ready it fails with ReasonNoLocation
// (ReserveWait waits). Other failures: ReasonNoSink (no network sink),
// ReasonInvalidToken, ReasonRedeemed, ReasonLeaseExpired,
// ReasonLeasesUnavailable (the lease store failed).
//
// In fleet mode, a token already reserved through another node gets that
// node's location, and Expires as the store tells it.
func (e *Engine) Reserve(region, token string) (Reservation, error) {
	return e.ReserveWait(context.Background(), region, token, 0, nil)
}

// ReserveWait is Reserve that, when nothing is ready, waits up to wait for
// the network sink's next entry, as Teleport waits (Request.Wait): a
// reservation made while the sink refills succeeds once a location lands.
// It fails with ReasonNoLocation once wait has passed, with
// ReasonShutdown when done closes or the engine shuts down, and with
// ctx's error when ctx ends. A wait of 0 or less does not wait.
func (e *Engine) ReserveWait(ctx context.Context, region, token string, wait time.Duration, done <-chan struct{}) (Reservation, error) {
	r, n, err := e.networkSink(region)
	if err != nil {
		return Reservation{}, err
	}
	if e.stopped() {
		return Reservation{}, &Error{Region: region, Sink: SinkNetwork, Reason: ReasonShutdown}
	}
	t := leasetoken.Token(token)
	if token == "" {
		t = n.NewToken()
	}
	pl, expires, err := n.ReserveWait(ctx, t, wait, e.stopping, done)
	switch {
	case errors.Is(err, pipeline.ErrClosed):
		return Reservation{}, &Error{Region: region, Sink: SinkNetwork, Reason: ReasonShutdown}
	case err != nil && ctx.Err() != nil:
		// As a teleport whose wait its caller ended.
		return Reservation{}, &Error{Region: region, Sink: SinkNetwork, Reason: ReasonNoLocation, Err: err}
	case err != nil:
		return Reservation{}, networkError(region, err)
	}
	loc := Location{Region: region, World: pl.World, X: pl.X, Y: pl.Y, Z: pl.Z, Sink: n.Name()}
	if ch, ok := r.world.resident.Peek(pl.Chunk()); ok {
		x, z := pl.Block().Local()
		loc.Biome = biomeName(ch.Column(x, z).Biome)
	}
	if expires.IsZero() {
		// No end known: report when a lease taken now would end.
		lease := r.leaseTTL
		if lease <= 0 {
			lease = pipeline.DefaultLeaseTTL
		}
		expires = e.opts.Clock().Add(lease)
	}
	return Reservation{Token: string(t), Location: loc, Expires: expires}, nil
}

// Redeem hands out the location leased to token, like Teleport: the
// caller calls Complete (or Cancel) with its ID. A token is redeemed once:
// a replay of it fails with ReasonRedeemed (ReasonLeaseExpired once the
// token is older than a lease), any other spelling of it with
// ReasonInvalidToken. It fails with ReasonNoSink, ReasonInvalidToken,
// ReasonUnknownToken, ReasonRedeemed, ReasonLeaseExpired,
// ReasonTooManyOpen (the token is then not used up; see HandoutLimits), or
// ReasonLeasesUnavailable.
//
// In fleet mode a token reserved through another node is redeemed here
// too. Its location then comes without a chunk held by this engine: Biome
// is "" and StandY is Y, and Cancel gives the location to this region's
// cold stage, which verifies it again before serving it.
func (e *Engine) Redeem(region, token string) (Location, error) {
	start := time.Now()
	r, err := e.regionFor(region, SinkNetwork)
	if err != nil {
		return Location{}, err
	}
	if e.out.full("") {
		return Location{}, e.out.refuse(r, SinkNetwork, e.out.nextExpiry(e.opts.Clock()))
	}
	return e.redeem(r, token, "", start)
}

// redeem redeems token for player ("" when the call names none) through
// the pipeline's Take, which does not wait for a token.
func (e *Engine) redeem(r *Region, token, player string, start time.Time) (Location, error) {
	h, sink, err := r.pipe.Take(context.Background(), pipeline.Request{Player: player, Token: leasetoken.Token(token)})
	if err != nil {
		return Location{}, takeError(r, Request{Player: player, Token: token}, sink, err)
	}
	// A leased location was promised: it is handed out even inside an
	// area marked since (unique placement), and its spot recorded.
	if radius := r.unique.Load(); radius > 0 {
		now := e.opts.Clock()
		r.placed.claim(h.Block(), 1, now, r.markSince(now))
	}
	return e.handOutAs(r, h, sink, player, "", true, start)
}

// Release gives the lease of token up before it expires: its location
// returns to the network sink's pool (or to cold). It fails with
// ReasonNoSink, ReasonUnknownToken when token holds no unredeemed lease,
// or ReasonLeasesUnavailable. In fleet mode a lease reserved through
// another node is released too (that node discards its location).
func (e *Engine) Release(region, token string) error {
	_, n, err := e.networkSink(region)
	if err != nil {
		return err
	}
	switch err := n.ReleaseLease(leasetoken.Token(token)); {
	case err == nil:
		return nil
	case errors.Is(err, pipeline.ErrLeaseStore):
		return networkError(region, err)
	}
	return &Error{Region: region, Sink: SinkNetwork, Reason: ReasonUnknownToken}
}
