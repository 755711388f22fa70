// Package api owns every JSON shape of the HTTP API v1 described by
// openapi.yaml: the bodies the server writes (Teleport, Reservation,
// Regions, Claims, Stats, Status, Error) and the request bodies it reads
// (TeleportRequest, QueueRequest, ReservationRequest, ClaimRequest).
// Package server maps the engine's types to these in one place, package
// client decodes into them, and the rtp command prints them (rtp pick
// --json prints Teleport values, rtp stats --json Stats), so that one
// thing has one spelling wherever it is written.
//
// # Conventions
//
// Keys are camelCase. A unit is part of the key's name: durations are float
// milliseconds (keys ending in "Ms"; Ms and FromMs convert, and methods
// such as Teleport.Waited and Latency.P99 give them as time.Duration),
// sizes in bytes end in "Bytes" (or are named "bytes"), distances in blocks
// end in "Blocks", rates in "PerSecond". Times are RFC 3339 in UTC. Lists
// and maps are never null: an empty one is [] or {}. A pointer field of a
// request body tells an absent key (or null) from a zero value: nil is
// absent; a pointer field of an answer (Stats.Watch,
// MemoryStats.LastRebuild) is omitted when nil. Clients must ignore keys
// they do not know: later versions of v1 may add keys, never remove or
// retype one.
//
// # Errors
//
// Every answer other than 2xx has the body Error:
//
//	{"error": {"code": "no-location", "message": "..."}}
//
// with Content-Type application/json; every 503 carries Retry-After. The
// API does not use RFC 9457 problem details (application/problem+json).
// That format puts its members at the top level, so moving to it would
// change where the code is read from (error.code) for every deployed
// client, server plugin and script, a breaking change the API's v1 does
// not allow; carrying both shapes in one body would give every error two
// spellings. The code is the stable, machine-readable member (what
// problem details call the type), the HTTP status carries the class, and
// the message is for people. A v2 of the API may adopt problem details.
//
// # Concurrency
//
// The types are plain values: their zero values are usable, and like any
// value they are safe for concurrent use as long as no goroutine writes
// one that others read. The package imports only the standard library.
package api
