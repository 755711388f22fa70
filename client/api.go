package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/rtpengine/rtp/api"
)

// TeleportRequest asks for a location.
type TeleportRequest struct {
	// Player names the player (1 to 64 characters). Required.
	Player string
	// Sink names the hot sink to take from ("general", "login" or "personal").
	// Default "": the general sink.
	Sink string
	// Token is a network token whose lease the teleport redeems. Default
	// "": none.
	Token string
	// Wait bounds how long the server waits for a location on a miss
	// (sent as waitMs, whole milliseconds, at most 30 s). Default 0: the
	// server's default (2 s). A negative Wait asks for no wait at all
	// (waitMs 0): a miss is answered at once.
	Wait time.Duration
}

// Teleport is a location handed to a player: package api's Teleport. Its
// reservation stays open until Complete (or Cancel) with its ID. Waited
// gives WaitedMs as a time.Duration.
type Teleport = api.Teleport

// Reservation is a network reservation: the token holding it, the
// location leased to it and when the lease ends (package api's
// Reservation).
type Reservation = api.Reservation

// Region is one configured region.
type Region = api.Region

// Claim is a rectangle of land in one world held by one owner; the corners
// are inclusive block coordinates.
type Claim = api.Claim

// NewClaim is the claim AddClaim adds: api.ClaimRequest with every field
// given.
type NewClaim struct {
	Owner string
	MinX  int64
	MinZ  int64
	MaxX  int64
	MaxZ  int64
}

// Teleport asks region for a location: POST /v1/regions/{region}/teleports.
// A miss is an *APIError with Code "no-location" (503, with RetryAfter);
// a region with no safe place left answers at once with Code
// "region-exhausted" (503).
func (c *Client) Teleport(ctx context.Context, region string, req TeleportRequest) (Teleport, error) {
	body := api.TeleportRequest{Player: &req.Player, Sink: req.Sink, Token: req.Token}
	switch {
	case req.Wait < 0:
		body.WaitMs = new(int64)
	case req.Wait > 0:
		w := max(ms(req.Wait), 1)
		body.WaitMs = &w
	}
	var t Teleport
	err := c.call(ctx, http.MethodPost, c.path("v1", "regions", region, "teleports"), body, &t, http.StatusOK)
	return t, err
}

// GroupTeleportRequest asks for the places of a group.
type GroupTeleportRequest struct {
	// Players name the players, no name twice: 1 to the region's group
	// size (8 by default). Required.
	Players []string
	// Wait bounds the wait on a miss, as TeleportRequest.Wait.
	Wait time.Duration
}

// GroupTeleport is the answer of a group teleport: one place per player,
// in the order asked (package api's GroupTeleport). Each place is a
// teleport of its own, completed or cancelled by its ID.
type GroupTeleport = api.GroupTeleport

// GroupPlace is the place of one player of a group (package api's
// GroupPlace).
type GroupPlace = api.GroupPlace

// GroupTeleport asks region for the places of a group, all within the
// region's group radius of their centre: POST
// /v1/regions/{region}/group-teleports. A miss is an *APIError with Code
// "no-location"; more players than the region's group size, Code
// "group-too-large"; a region without a group sink, Code "sink-disabled".
func (c *Client) GroupTeleport(ctx context.Context, region string, req GroupTeleportRequest) (GroupTeleport, error) {
	body := api.GroupTeleportRequest{Players: req.Players}
	if body.Players == nil {
		body.Players = []string{}
	}
	switch {
	case req.Wait < 0:
		body.WaitMs = new(int64)
	case req.Wait > 0:
		w := max(ms(req.Wait), 1)
		body.WaitMs = &w
	}
	var g GroupTeleport
	err := c.call(ctx, http.MethodPost, c.path("v1", "regions", region, "group-teleports"), body, &g, http.StatusOK)
	return g, err
}

// Complete tells that the player arrived: POST /v1/teleports/{id}/complete.
func (c *Client) Complete(ctx context.Context, id uint64) error {
	return c.call(ctx, http.MethodPost, c.path("v1", "teleports", itoa(id), "complete"), nil, nil, http.StatusNoContent)
}

// Cancel tells that the player gave up: DELETE /v1/teleports/{id}.
func (c *Client) Cancel(ctx context.Context, id uint64) error {
	return c.call(ctx, http.MethodDelete, c.path("v1", "teleports", itoa(id)), nil, nil, http.StatusNoContent)
}

// Join reports that a player joined (login sink):
// POST /v1/regions/{region}/players/{player}/join.
func (c *Client) Join(ctx context.Context, region, player string) error {
	return c.call(ctx, http.MethodPost, c.path("v1", "regions", region, "players", player, "join"), nil, nil, http.StatusNoContent)
}

// Quit reports that a player left: POST /v1/regions/{region}/players/{player}/quit.
func (c *Client) Quit(ctx context.Context, region, player string) error {
	return c.call(ctx, http.MethodPost, c.path("v1", "regions", region, "players", player, "quit"), nil, nil, http.StatusNoContent)
}

// OpenQueue opens a player's personal queue:
// PUT /v1/regions/{region}/players/{player}/queue. A capacity of 0 or less
// leaves it to the server's configuration.
func (c *Client) OpenQueue(ctx context.Context, region, player string, capacity int) error {
	var b api.QueueRequest
	if capacity > 0 {
		c := int64(capacity)
		b.Capacity = &c
	}
	return c.call(ctx, http.MethodPut, c.path("v1", "regions", region, "players", player, "queue"), b, nil, http.StatusNoContent)
}

// CloseQueue closes a player's personal queue:
// DELETE /v1/regions/{region}/players/{player}/queue.
func (c *Client) CloseQueue(ctx context.Context, region, player string) error {
	return c.call(ctx, http.MethodDelete, c.path("v1", "regions", region, "players", player, "queue"), nil, nil, http.StatusNoContent)
}

// Reserve leases a location to a network token:
// POST /v1/regions/{region}/network/reservations. An empty token asks the
// server to mint one. On a miss the server waits its default (2 s) for a
// location to land in the network sink (ReserveWait chooses).
func (c *Client) Reserve(ctx context.Context, region, token string) (Reservation, error) {
	return c.ReserveWait(ctx, region, token, 0)
}

// ReserveWait is Reserve with a bound on the server's wait on a miss, as
// TeleportRequest.Wait: sent as waitMs (whole milliseconds, at most 30
// s); 0 leaves it to the server's default, a negative wait asks for none
// (a miss is answered at once). A miss is an *APIError with Code
// "no-location" (503).
func (c *Client) ReserveWait(ctx context.Context, region, token string, wait time.Duration) (Reservation, error) {
	body := api.ReservationRequest{Token: token}
	switch {
	case wait < 0:
		body.WaitMs = new(int64)
	case wait > 0:
		w := max(ms(wait), 1)
		body.WaitMs = &w
	}
	var r Reservation
	err := c.call(ctx, http.MethodPost, c.path("v1", "regions", region, "network", "reservations"), body, &r, http.StatusCreated)
	return r, err
}

// Redeem takes the location leased to token:
// POST /v1/regions/{region}/network/reservations/{token}/redeem.
func (c *Client) Redeem(ctx context.Context, region, token string) (Teleport, error) {
	if token == "" {
		return Teleport{}, errors.New("client: Redeem: empty token")
	}
	var t Teleport
	err := c.call(ctx, http.MethodPost, c.path("v1", "regions", region, "network", "reservations", token, "redeem"), nil, &t, http.StatusOK)
	return t, err
}

// Release gives a lease back:
// DELETE /v1/regions/{region}/network/reservations/{token}.
func (c *Client) Release(ctx context.Context, region, token string) error {
	if token == "" {
		return errors.New("client: Release: empty token")
	}
	return c.call(ctx, http.MethodDelete, c.path("v1", "regions", region, "network", "reservations", token), nil, nil, http.StatusNoContent)
}

// Regions lists the configured regions: GET /v1/regions.
func (c *Client) Regions(ctx context.Context) ([]Region, error) {
	var out api.Regions
	err := c.call(ctx, http.MethodGet, c.path("v1", "regions"), nil, &out, http.StatusOK)
	return out.Regions, err
}

// StatsRaw returns a region's stats as the server wrote them:
// GET /v1/regions/{region}/stats.
func (c *Client) StatsRaw(ctx context.Context, region string) (json.RawMessage, error) {
	var raw json.RawMessage
	err := c.call(ctx, http.MethodGet, c.path("v1", "regions", region, "stats"), nil, &raw, http.StatusOK)
	return raw, err
}

// Stats returns a region's stats, decoded into package api's shape:
// GET /v1/regions/{region}/stats. Keys the shape does not know are
// skipped; StatsRaw keeps them.
func (c *Client) Stats(ctx context.Context, region string) (Stats, error) {
	raw, err := c.StatsRaw(ctx, region)
	if err != nil {
		return Stats{}, err
	}
	var s Stats
	if err := json.Unmarshal(raw, &s); err != nil {
		return Stats{}, fmt.Errorf("client: stats of %q: %w", region, err)
	}
	return s, nil
}

// Claims lists the claims of a world: GET /v1/worlds/{world}/claims.
func (c *Client) Claims(ctx context.Context, world string) ([]Claim, error) {
	var out api.Claims
	err := c.call(ctx, http.MethodGet, c.path("v1", "worlds", world, "claims"), nil, &out, http.StatusOK)
	return out.Claims, err
}

// AddClaim adds a claim to a world: POST /v1/worlds/{world}/claims.
func (c *Client) AddClaim(ctx context.Context, world string, claim NewClaim) (Claim, error) {
	body := api.ClaimRequest{Owner: &claim.Owner, MinX: &claim.MinX, MinZ: &claim.MinZ, MaxX: &claim.MaxX, MaxZ: &claim.MaxZ}
	var out Claim
	err := c.call(ctx, http.MethodPost, c.path("v1", "worlds", world, "claims"), body, &out, http.StatusCreated)
	return out, err
}

// RemoveClaim removes a claim: DELETE /v1/worlds/{world}/claims/{id}. An
// unknown id is an *APIError with Code "unknown-claim".
func (c *Client) RemoveClaim(ctx context.Context, world string, id int64) error {
	return c.call(ctx, http.MethodDelete, c.path("v1", "worlds", world, "claims", fmt.Sprint(id)), nil, nil, http.StatusNoContent)
}

// Changes is what ReportChanges did: api.Changes.
type Changes = api.Changes

// ReportChanges tells the service that the game changed blocks in the
// given chunks (chunk coordinates x, z) of a world and has not saved them
// yet: POST /v1/worlds/{world}/changes. The service drops its cached places
// there and holds the chunks until the save reaches disk. At most 4,096
// chunks a call.
func (c *Client) ReportChanges(ctx context.Context, world string, chunks [][2]int64) (Changes, error) {
	body := api.ChangesRequest{Chunks: make([][]int64, len(chunks))}
	for i, ch := range chunks {
		body.Chunks[i] = []int64{ch[0], ch[1]}
	}
	var out Changes
	err := c.call(ctx, http.MethodPost, c.path("v1", "worlds", world, "changes"), body, &out, http.StatusOK)
	return out, err
}

// ScanReset restarts a region's scan: POST /v1/admin/regions/{region}/scan/reset.
func (c *Client) ScanReset(ctx context.Context, region string) error {
	return c.call(ctx, http.MethodPost, c.path("v1", "admin", "regions", region, "scan", "reset"), nil, nil, http.StatusNoContent)
}

// ScanPause pauses a region's scan: POST /v1/admin/regions/{region}/scan/pause.
func (c *Client) ScanPause(ctx context.Context, region string) error {
	return c.call(ctx, http.MethodPost, c.path("v1", "admin", "regions", region, "scan", "pause"), nil, nil, http.StatusNoContent)
}

// ScanResume resumes a region's scan: POST /v1/admin/regions/{region}/scan/resume.
func (c *Client) ScanResume(ctx context.Context, region string) error {
	return c.call(ctx, http.MethodPost, c.path("v1", "admin", "regions", region, "scan", "resume"), nil, nil, http.StatusNoContent)
}

// ExportMemory copies a region's memory debug export (JSON) to w:
// GET /v1/admin/regions/{region}/memory. It fails with ErrTooLarge in the
// chain past Options.MaxExportBytes (what was copied stays written).
func (c *Client) ExportMemory(ctx context.Context, region string, w io.Writer) error {
	path := c.path("v1", "admin", "regions", region, "memory")
	resp, err := c.do(ctx, http.MethodGet, path, nil, http.StatusOK)
	if err != nil {
		return err
	}
	defer finish(resp)
	n, err := io.Copy(w, io.LimitReader(resp.Body, c.maxExp))
	if err != nil {
		return fmt.Errorf("client: GET %s: %w", path, err)
	}
	if n == c.maxExp {
		var one [1]byte
		if k, _ := resp.Body.Read(one[:]); k > 0 {
			return fmt.Errorf("client: GET %s: %w (more than %d bytes)", path, ErrTooLarge, c.maxExp)
		}
	}
	return nil
}

// Reload asks the server to re-read its configuration file:
// POST /v1/admin/reload. A change that needs a restart is an *APIError with
// Code "restart-needed".
func (c *Client) Reload(ctx context.Context) error {
	return c.call(ctx, http.MethodPost, c.path("v1", "admin", "reload"), nil, nil, http.StatusNoContent)
}

// Healthz checks that the server answers: GET /healthz.
func (c *Client) Healthz(ctx context.Context) error {
	return c.status(ctx, "healthz")
}

// Readyz checks that the server is ready to serve: GET /readyz. A server
// not ready yet answers an *APIError with Code "not-ready" whose Message
// says why.
func (c *Client) Readyz(ctx context.Context) error {
	return c.status(ctx, "readyz")
}

func (c *Client) status(ctx context.Context, name string) error {
	var out api.Status
	return c.call(ctx, http.MethodGet, c.path(name), nil, &out, http.StatusOK)
}
