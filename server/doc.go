// Package server is the HTTP API of rtp (version 1): JSON routes under /v1
// over an engine, Prometheus metrics at /metrics, health at /healthz and
// readiness at /readyz. api/openapi.yaml in the repository describes every
// route, body, answer and error; a test checks that it lists exactly the
// routes the server registers.
//
// Every body the server writes or reads is one of package api's types.
// The engine's types become them in one place (APITeleport,
// APIGroupTeleport, APIStats and their unexported kin): no engine, pipeline or memory struct is marshalled
// as it is, so a change inside the engine cannot change the wire.
//
// # Routes
//
//	GET    /v1/regions                                              regions, their worlds, paused
//	GET    /v1/regions/{region}/stats                               api.Stats
//	POST   /v1/regions/{region}/teleports                           a location (waits on a miss)
//	POST   /v1/regions/{region}/group-teleports                     a place per player, within the group radius
//	POST   /v1/teleports/{id}/complete                              the player arrived
//	DELETE /v1/teleports/{id}                                       the player gave up
//	POST   /v1/regions/{region}/players/{player}/join               login sink events
//	POST   /v1/regions/{region}/players/{player}/quit
//	PUT    /v1/regions/{region}/players/{player}/queue              personal queue open
//	DELETE /v1/regions/{region}/players/{player}/queue              and close
//	POST   /v1/regions/{region}/network/reservations                reserve (201, a token)
//	POST   /v1/regions/{region}/network/reservations/{token}/redeem redeem
//	DELETE /v1/regions/{region}/network/reservations/{token}        release
//	GET    /v1/worlds/{world}/claims                                list claims
//	POST   /v1/worlds/{world}/claims                                add a claim (201)
//	DELETE /v1/worlds/{world}/claims/{id}                           remove a claim
//	POST   /v1/worlds/{world}/changes                               chunks changed, not yet saved
//	POST   /v1/admin/regions/{region}/scan/reset|pause|resume       scan control
//	GET    /v1/admin/regions/{region}/memory                        memory debug export
//	POST   /v1/admin/reload                                         re-read the config file
//	GET    /metrics, /healthz, /readyz
//
// A world in a claims route must be the world of some region: claims of a
// world no region draws from would be checked by nobody, so the server
// answers unknown-world. The changes route takes the chunks a game server
// changed before saving them (engine.Engine.ChunksChanged): a world the
// engine does not know is 404 unknown-world, one whose changes it does not
// follow (procedural, or watching off) 409 not-watched.
//
// # Requests
//
// A request body is one JSON object (Content-Type application/json, or no
// Content-Type with the X-RTP-Request header; any other declared type is
// 415), at most Options.MaxBodyBytes (413 too-large beyond). Its
// keys must be the route's fields spelt exactly, each once; nothing may
// follow the object. An empty body stands for {} where every field is
// optional. Malformed JSON, an unknown or repeated field, a value of the
// wrong type, a missing required field or a value out of range is a 400
// bad-request whose message names the field; a value the engine or the
// claims store refuses is a 400 invalid. Routes without a body ignore one.
//
// # Web pages
//
// A web page must not be able to drive the API, even one served from
// elsewhere to a browser on the machine of a loopback service. So every
// POST, PUT, PATCH and DELETE, with a body or without, with an admin token
// configured or not, needs either "Content-Type: application/json"
// (parameters allowed; a charset other than UTF-8 refused) or the header
// "X-RTP-Request" with any non-empty value (HeaderRequest; "1" by
// convention, and what a request without a body sends); otherwise it is
// answered 415 unsupported-media-type saying what to send (this is checked
// before the admin token). A browser sends
// neither cross-site without a CORS preflight first, and the server
// approves none: no answer carries an Access-Control-Allow-* header and
// every OPTIONS request is answered 405. GET and HEAD need nothing.
//
// A page can also reach a loopback service same-origin, by pointing a
// host name of its own at 127.0.0.1 (DNS rebinding); its requests then
// carry that host name. A request whose Host (port aside, any letter case)
// is not in Options.AllowedHosts is answered 421 misdirected, before any
// other check: 421 rather than 403 because nothing about the client is
// refused, only the name it used for the server, which another name may
// reach. With the list empty, Serve on a TCP loopback listener answers
// only localhost, names under .localhost and loopback IP addresses; on
// other listeners, and through Handler alone, any host. A loopback
// service behind a proxy that passes the public host name on must list
// that name, or "*" for any.
//
// Error messages and log lines never repeat the Authorization header or
// another header's value. A path segment longer than 24 bytes, such as a
// network token, is repeated only as its first 6 bytes and "…", and the
// log line of a failed request has the path's network token and the
// request's credentials cut the same way wherever its detail quotes them.
//
// # Errors
//
// Every answer other than 2xx has the body
//
//	{"error": {"code": "<code>", "message": "<human text>"}}
//
// (api.Error; package api's documentation says why it is not RFC 9457
// problem details).
//
// The codes of the engine's *engine.Error are its Reason:
//
//	unknown-region, unknown-id, unknown-token     404
//	unknown-sink, invalid, invalid-token,         400
//	group-too-large
//	sink-disabled, token-redeemed, restart-needed 409
//	lease-expired                                 410
//	no-location (Retry-After: 1), paused (5),     503
//	shutdown (5), too-many-open (until the oldest handout in the way ends),
//	region-exhausted (30), leases-unavailable (1)
//
// and the server's own: bad-request 400, unauthorized 401 (with
// WWW-Authenticate: Bearer), unknown-world and unknown-claim 404, not-found
// 404 and method-not-allowed 405 (with Allow) for a request no route
// matches, too-large 413, unsupported-media-type 415, misdirected 421,
// not-ready 503 (from /readyz, Retry-After: 1) and
// internal 500, whose message is generic: the detail goes to the log. A
// panic in a handler is recovered, logged with its stack and answered as an
// internal error. A teleport waiting on a miss when Serve begins its
// shutdown is answered 503 shutdown.
//
// # Authentication
//
// With Options.Token set, every POST, PUT and DELETE and every /v1/admin/
// route needs "Authorization: Bearer <token>"; the token is compared as a
// SHA-256 digest in constant time, so neither its bytes nor its length
// show in the time an answer takes. Without a token those routes are open
// (Serve logs a warning when it listens beyond loopback). GET /v1/regions,
// stats, the claims list, /metrics, /healthz and /readyz are always open.
//
// (*Server).SetToken replaces the token while the server runs. POST
// /v1/admin/reload, after Options.Reload succeeded, reads the token again
// with Options.ReloadToken when set and applies it: the new token is
// accepted from then on and the old one refused. When the token cannot be
// read, the old one stays in force and the reload is answered 500 internal
// saying so, the detail in the log.
//
// # Metrics
//
// HTTP, updated per request (route is the route's pattern, such as
// "POST /v1/regions/{region}/teleports", or "unmatched"):
//
//	rtp_http_requests_total{route,code}             counter
//	rtp_http_request_duration_seconds{route}        histogram, 100 µs to 30 s
//	rtp_http_requests_in_flight                     gauge
//	rtp_http_panics_total                           counter
//
// The engine, read from engine.Stats of every region at scrape time:
//
//	rtp_region_info{region,world}                   1
//	rtp_region_paused{region}                       1 while the scan is paused
//	rtp_region_exhausted{region}                    1 while no safe place is left
//	rtp_region_restored_locations{region}           cold locations restored at start
//	rtp_teleports_total{region}                     teleports served
//	rtp_teleport_latency_seconds{region}            histogram since start, buckets at every
//	                                                power of two ns from 8.192 µs to 34.4 s
//	                                                (exact; the same histogram gives `rtp stats`
//	                                                its p50/p90/p99)
//	rtp_teleport_latency_max_seconds{region}
//	rtp_sink_fill{region,sink,kind}                 and _capacity, _quota, _leased,
//	                                                _demand_per_second, _pending_promotions
//	rtp_sink_hits_total{region,sink,kind}           and _misses_total, _promotions_total,
//	                                                _stale_total
//	rtp_group_places{region,sink}                   places the subspaces of a group sink
//	                                                hold; and rtp_group_size,
//	                                                rtp_group_radius_blocks (its profile)
//	rtp_group_teleports_total{region,sink}          groups placed; and rtp_group_players_total,
//	                                                _trimmed_places_total (released when a
//	                                                subspace served a smaller group),
//	                                                _no_room_total
//	rtp_queue_fill{region,queue}                    backlog and cold; and rtp_queue_capacity
//	rtp_pipeline_screenings_in_flight{region}       and rtp_pipeline_promotions_in_flight
//	rtp_pipeline_screened_total{region}             and _promotions_total, _transfers_total,
//	                                                _demotions_total, _misses_total,
//	                                                _login_exhaustion_total, _memory_errors_total,
//	                                                _reservations_foreign_closed_total
//	rtp_pipeline_screen_rejections_total{region,reason}
//	rtp_pipeline_promotion_rejections_total{region,reason}
//	rtp_memory_cells{region}                        and _bad_cells, _probation_cells,
//	                                                _bad_fraction, _coverage, _active_runs,
//	                                                _probation_runs, _resident_bytes,
//	                                                _rebuilds_total
//	rtp_memory_bad_cells_by_cause{region,cause}
//	rtp_memory_rejections_total{region,cause,source}
//	rtp_resident_reservations_opened_total{world}   and _closed_total, _forced_total;
//	                                                rtp_resident_reservations_open
//	rtp_resident_hits_total{world}                  and _misses_total, _loads_total,
//	                                                _load_errors_total, _evictions_total
//	rtp_resident_chunks{world}                      and _reserved_chunks, _bytes,
//	                                                _loads_in_flight
//	rtp_claims                                      claims in force
//	rtp_location_writes_total                       and _coalesced_total, _dropped_total, _pending;
//	                                                rtp_location_write_failures_total, _retries_total;
//	                                                rtp_location_writes_failing: the locations writer
//	rtp_refill_lanes                                refill work run at once (pacer.Gate)
//	rtp_refill_rests_total                          and _rested_seconds_total: the pacing's rests
//	rtp_safety_unknown_blocks{region}               block names the collision data lacks
//	rtp_safety_unknown_block_rejections_total{region} columns screened out on unknown ground
//	rtp_unique_dropped_total{region}                cached places closed as too close to a delivery
//	rtp_unique_spot_chunks{region}                  chunks holding spots handed out
//	rtp_pipeline_reservation_failures_total{region,kind} promotions that could not reserve their chunk
//	rtp_handouts_open{region}                       handed out, not yet closed
//	rtp_handouts_{completed,cancelled,expired,replaced,refused}_total{region}
//	rtp_region_unclean_start{region}                1 after a start that followed a crash
//	rtp_region_discarded_locations{region}          hot locations dropped at that start
//	rtp_world_damaged_chunks{world}                 chunks of a Minecraft world unreadable now
//	rtp_world_read_errors_total{world}              chunk reads that failed after retries
//	rtp_world_torn_retries_total{world}             chunk reads retried (a write in progress)
//	rtp_world_changed_chunks_total{world}           chunks seen changed on disk
//
// The resident store belongs to a world, so its metrics carry the world,
// once per world. A region whose Stats fail is left out of a scrape (and
// logged). With the default registry, /metrics also has the Go runtime and
// process collectors.
//
// # Concurrency
//
// A Server is safe for concurrent use. Serve runs one http.Server until its
// context ends and then shuts it down gracefully; the engine's lifecycle is
// the caller's (stop the server first, then the engine).
package server
