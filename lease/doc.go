// Package lease defines the store of network leases: the hold a network
// token takes on a location while a player moves between servers.
//
// A lease is granted under a token for a time to live, redeemed once by
// whichever node the player arrives on, or released by the node that no
// longer needs it. The Store interface is the contract; package
// lease/local keeps leases in one process's memory, optionally written
// through a Journal to outlive the process (package
// pipeline/sqlitepersist keeps one in SQLite), and package
// lease/redis keeps them in Redis, so that a token reserved through any
// node of a fleet can be redeemed through any other, even after the
// granting node died. Package lease/leasetest checks an implementation
// against the contract. Package lease/token mints and verifies the
// tokens a network sink keys its leases by.
//
// # Contract
//
// A token's record passes through these states, on the store's clock:
//
//   - none: never granted, released, or forgotten;
//   - live: granted less than its TTL ago and neither redeemed nor
//     released;
//   - redeemed: redeemed, until the moment the lease would have ended;
//   - expired: its lease ended (by time, or by redemption whose end has
//     passed), for one more TTL after that end; then it is forgotten.
//
// The methods answer as follows (each may also return an error of the
// store's transport, or the context's error, wrapped):
//
//	          none         live           redeemed     expired
//	Grant     grants       ErrExists      ErrRedeemed  grants
//	Redeem    ErrUnknown   the lease (1)  ErrRedeemed  ErrExpired
//	Release   ErrUnknown   nil (2)        ErrRedeemed  ErrExpired
//	Get       ErrUnknown   lease, expiry  ErrRedeemed  ErrExpired
//
// (1) Redeem is atomic across every client of a store: of any number of
// concurrent Redeems of a live lease, exactly one gets the lease and the
// others ErrRedeemed. (2) A released token is in state none: it may be
// granted again.
//
// Every method returns ErrInvalid for an empty token or one longer than
// MaxTokenLen; Grant also for a TTL outside [time.Millisecond, MaxTTL] or
// a Lease whose World or Owner is longer than MaxNameLen. TTLs are kept
// to the millisecond (shorter parts are dropped).
//
// A store knows nothing of a token's age. A caller that, like the
// pipeline's network sink, refuses tokens older than one lease TTL gets
// "a redeemed token never leases again" for good: the redeemed state
// lasts until the end of the lease, which is at least as late as the
// token's own end of youth.
//
// Owned lists the live leases granted with a given Lease.Owner, so that a
// surviving node can take over, or release, the leases of a node that
// died. Leases granted with an empty Owner are not listed.
package lease
