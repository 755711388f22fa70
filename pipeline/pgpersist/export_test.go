package pgpersist

import "github.com/jackc/pgx/v5/pgxpool"

// Abandon closes d as a killed process would leave it: every write queued
// is committed, but the node neither returns its claims nor records a
// clean shutdown.
func Abandon(d *DB) error {
	d.abandon = true
	return d.Close()
}

// StopHeartbeat stops d's lease upkeep (renewals and sweeps) and leaves
// the rest running, as a node cut off from the database or stalled would.
func StopHeartbeat(d *DB) { d.haltLease() }

// Pool returns d's connection pool.
func Pool(d *DB) *pgxpool.Pool { return d.pool }
