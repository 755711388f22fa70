package api

import "time"

// Teleport is a location handed out: the answer of POST
// /v1/regions/{region}/teleports and of a redeemed reservation.
type Teleport struct {
	ID     uint64 `json:"id"`
	Region string `json:"region"`
	World  string `json:"world"`
	X      int64  `json:"x"`
	Y      int64  `json:"y"`
	Z      int64  `json:"z"`
	// StandY is the height the player's feet rest at: Y above a full
	// block, lower above a slab, snow layer, carpet, path or farmland.
	StandY float64 `json:"standY"`
	Biome  string  `json:"biome"`
	// Sink names the sink that served the location.
	Sink string `json:"sink"`
	// WaitedMs is how long the request waited, in milliseconds.
	WaitedMs float64 `json:"waitedMs"`
}

// Reservation is a network reservation: the token holding it, the
// location leased to it and when the lease ends.
type Reservation struct {
	Token    string    `json:"token"`
	Location Teleport  `json:"location"`
	Expires  time.Time `json:"expires"`
}

// Region is one configured region.
type Region struct {
	Name   string `json:"name"`
	World  string `json:"world"`
	Paused bool   `json:"paused"`
}

// Regions is the answer of GET /v1/regions.
type Regions struct {
	Regions []Region `json:"regions"`
}

// Claim is a rectangle of land in one world held by one owner; the corners
// are inclusive block coordinates.
type Claim struct {
	ID      int64     `json:"id"`
	World   string    `json:"world"`
	Owner   string    `json:"owner"`
	MinX    int64     `json:"minX"`
	MinZ    int64     `json:"minZ"`
	MaxX    int64     `json:"maxX"`
	MaxZ    int64     `json:"maxZ"`
	Created time.Time `json:"created"`
}

// Claims is the answer of GET /v1/worlds/{world}/claims.
type Claims struct {
	Claims []Claim `json:"claims"`
}

// Latency summarizes the durations of the teleports a region served, in
// milliseconds.
type Latency struct {
	Count uint64  `json:"count"`
	P50Ms float64 `json:"p50Ms"`
	P90Ms float64 `json:"p90Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
}

// Resident are the counters (since start) and gauges of the resident chunk
// store of a region's world.
type Resident struct {
	// Opened counts the chunk reservations handed out; Closed those
	// closed by any path; Forced, of Closed, those the watchdog closed
	// past their lifespan. Open is the number open now.
	Opened uint64 `json:"opened"`
	Closed uint64 `json:"closed"`
	Forced uint64 `json:"forced"`
	Open   int    `json:"open"`
	// Hits and Misses count the reservations served by a resident chunk
	// and those that waited for a load; Loads the loads finished and
	// LoadErrors those that failed; Evictions the chunks evicted for the
	// memory budget; Stale the resident copies found changed at the
	// source and loaded again.
	Hits       uint64 `json:"hits"`
	Misses     uint64 `json:"misses"`
	Loads      uint64 `json:"loads"`
	LoadErrors uint64 `json:"loadErrors"`
	Evictions  uint64 `json:"evictions"`
	Stale      uint64 `json:"stale"`
	// Resident is the number of chunks in memory; Reserved, of them, those
	// held by a reservation; Retired the stale copies still held.
	Resident int `json:"resident"`
	Reserved int `json:"reserved"`
	Retired  int `json:"retired"`
	// Bytes is the estimated memory of the resident chunks, in bytes.
	Bytes int64 `json:"bytes"`
	// Loading is the number of loads in flight.
	Loading int `json:"loading"`
}

// Status is the answer of GET /healthz ("ok") and GET /readyz ("ready").
type Status struct {
	Status string `json:"status"`
	// Exhausted names the regions with no safe place left, each with its
	// rejected cells by cause ("spawn (vert 900, ungenerated 124)"), in
	// the answer of /readyz; absent when there is none. The server is
	// ready all the same: its other regions serve, and an exhausted one
	// answers at once.
	Exhausted []string `json:"exhausted,omitempty"`
	// Warnings are what an operator should know that does not stop the
	// server serving (a locations database found lost at start), one line
	// each; absent when there is none.
	Warnings []string `json:"warnings,omitempty"`
}

// Error is the body of every non-2xx answer (see the package
// documentation for why it is not an RFC 9457 problem document).
type Error struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the code and explanation of an Error.
type ErrorDetail struct {
	// Code is the API's error code ("bad-request", "no-location"...).
	Code string `json:"code"`
	// Message explains the error to a person.
	Message string `json:"message"`
}

// TeleportRequest is the body of POST /v1/regions/{region}/teleports.
type TeleportRequest struct {
	// Player names the player (1 to 64 characters). Required.
	Player *string `json:"player"`
	// Sink names the hot sink to take from; "" is the general sink.
	Sink string `json:"sink,omitempty"`
	// Token is a network token whose lease the teleport redeems; "" is
	// none.
	Token string `json:"token,omitempty"`
	// WaitMs bounds how long the server waits on a miss, in whole
	// milliseconds (0 to 30000); nil is the server's default.
	WaitMs *int64 `json:"waitMs,omitempty"`
}

// GroupTeleportRequest is the body of POST
// /v1/regions/{region}/group-teleports.
type GroupTeleportRequest struct {
	// Players name the players of the group, each as
	// TeleportRequest.Player, no name twice: 1 to the region's group size
	// (sinks.group.max_size). Required.
	Players []string `json:"players"`
	// WaitMs bounds how long the server waits on a miss, as
	// TeleportRequest.WaitMs.
	WaitMs *int64 `json:"waitMs,omitempty"`
}

// GroupPlace is the place of one player of a group teleport: a location
// handed out (completed or cancelled by its id, as a teleport's) and the
// player it is for.
type GroupPlace struct {
	Player string `json:"player"`
	Teleport
}

// GroupTeleport is the answer of POST
// /v1/regions/{region}/group-teleports: one place per player, in the
// order of the request, all distinct and within the region's group
// radius of their centre.
type GroupTeleport struct {
	Locations []GroupPlace `json:"locations"`
}

// QueueRequest is the body of PUT
// /v1/regions/{region}/players/{player}/queue.
type QueueRequest struct {
	// Capacity is the queue's capacity; nil (or 0) leaves it to the
	// server's configuration.
	Capacity *int64 `json:"capacity,omitempty"`
}

// ReservationRequest is the body of POST
// /v1/regions/{region}/network/reservations.
type ReservationRequest struct {
	// Token is the network token to lease to; "" asks the server to mint
	// one.
	Token string `json:"token,omitempty"`
	// WaitMs bounds how long the server waits on a miss, in whole
	// milliseconds (0 to 30,000), as TeleportRequest.WaitMs. Absent: the
	// server's default (2 s); 0: a miss is answered at once.
	WaitMs *int64 `json:"waitMs,omitempty"`
}

// ChangesRequest is the body of POST /v1/worlds/{world}/changes: the
// chunks a game server changed and has not saved yet, each as its chunk
// coordinates [x, z]. Required; at most 4,096 chunks.
type ChangesRequest struct {
	Chunks [][]int64 `json:"chunks"`
}

// Changes is the answer of POST /v1/worlds/{world}/changes: how many
// distinct chunks the request named, how many of them were not held
// already, and the memory cells forgotten and cached places dropped over
// every region of the world.
type Changes struct {
	Chunks    int `json:"chunks"`
	Held      int `json:"held"`
	Forgotten int `json:"forgotten"`
	Dropped   int `json:"dropped"`
}

// ClaimRequest is the body of POST /v1/worlds/{world}/claims. Every field
// is required.
type ClaimRequest struct {
	Owner *string `json:"owner"`
	MinX  *int64  `json:"minX"`
	MinZ  *int64  `json:"minZ"`
	MaxX  *int64  `json:"maxX"`
	MaxZ  *int64  `json:"maxZ"`
}
