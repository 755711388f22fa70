// Package httpverify is an out-of-process verifier: an HTTP callback,
// typically to an agent on the game side that knows the claims of the
// server's own plugins, asked whether a landing place is acceptable.
//
// # Protocol
//
// For each location checked, the verifier sends one request:
//
//	POST <configured URL>
//	Content-Type: application/json
//	Accept: application/json
//	<Options.Header, e.g. Authorization: Bearer ...>
//
//	{"world":"overworld","x":-1200,"y":71,"z":388}
//
// world is the world name; x, y, z are the block coordinates of the landing
// place (integers; y is the block the player would stand in). The server
// answers with a 2xx status and a JSON object holding a boolean "allowed":
//
//	{"allowed": true}     the place is acceptable
//	{"allowed": false}    the place is rejected (for instance, claimed)
//
// Other members of the object are ignored, so the server may add a reason
// or diagnostics. The key is matched exactly (case-sensitive).
//
// Anything else is an error, not an answer: a transport failure, no
// complete answer within Options.Timeout, a status outside 2xx (redirects
// are not followed by the default client), a body larger than
// Options.MaxResponseBytes, a body that is not a JSON object, or one whose
// "allowed" is missing, null or not a boolean. Through verify.Registry an
// error becomes a rejection with Result.Err set, which callers record under
// a transient cause (memory.CauseTimeout): the place is skipped this time
// and never remembered, since nothing is known about it. A false answer is
// a rejection with Result.Err nil, attributed to the verifier's configured
// name; it is remembered as safetyExternal with the TTL of that name in
// ttl.yml (verifiers.<name>, else causes.safetyExternal).
//
// # Extrinsic
//
// The answer depends on state outside the process, and asking costs a
// network round trip, so the verifier is extrinsic (Verifier.Extrinsic):
// the pipeline asks it when promoting a place into a hot sink and never
// re-runs it when moving entries between sinks. A sink that uses it
// declares pipeline.Criteria.Extrinsic, and receives transfers only by
// common provenance.
package httpverify
