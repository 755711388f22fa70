package sqlitepersist

import (
	"context"
	"fmt"
	"time"

	"github.com/rtpengine/rtp/internal/sqlitedb"
	"github.com/rtpengine/rtp/lease"
)

// leasesColumns is the leases table (version 4): one row per network
// token a lease/local store knows of. lease is the Lease's binary encoding
// (lease.Lease.AppendBinary; the zero Lease once redeemed); expires and
// forget are Unix nanoseconds on the store's clock; redeemed is 0 or 1.
const leasesColumns = `(
		token    TEXT PRIMARY KEY,
		lease    BLOB NOT NULL,
		expires  INTEGER NOT NULL,
		forget   INTEGER NOT NULL,
		redeemed INTEGER NOT NULL
	) WITHOUT ROWID`

// The statements of the lease journal.
const (
	sqlLeasePut = `INSERT INTO leases (token, lease, expires, forget, redeemed) VALUES (?1, ?2, ?3, ?4, ?5)
		ON CONFLICT (token) DO UPDATE SET lease = excluded.lease, expires = excluded.expires,
			forget = excluded.forget, redeemed = excluded.redeemed`
	sqlLeaseDelete = `DELETE FROM leases WHERE token = ?`
	sqlLeaseTrim   = `DELETE FROM leases WHERE forget <= ?`
	sqlLeaseLoad   = `SELECT token, lease, expires, forget, redeemed FROM leases WHERE forget > ?`
)

// Leases returns the database's lease journal: the leases table, in which
// a lease/local store (local.Open) keeps a single node's network leases
// and redemptions, so that a token redeemed stays redeemed, and one
// reserved stays reserved, across a restart or a crash of the process.
//
// Each write is a transaction of its own, committed before the call
// returns (not queued like the locations' writes): a process killed after
// the call loses nothing of it. Its calls wait for the writer's
// transaction in progress, if any, and are bounded by their context. The
// journal is safe for concurrent use; it fails once the DB is closed.
//
// A row whose lease cannot be decoded (a damaged file) loads as redeemed:
// its token is refused rather than its location handed out unknown.
func (d *DB) Leases() lease.Journal { return leaseJournal{d} }

// leaseJournal is the lease.Journal of a DB.
type leaseJournal struct{ d *DB }

// Load implements lease.Journal.
func (j leaseJournal) Load(ctx context.Context, now time.Time) ([]lease.Record, error) {
	rows, err := j.d.db.QueryContext(ctx, sqlLeaseLoad, now.UnixNano())
	if err != nil {
		return nil, j.failed("load", err)
	}
	defer rows.Close()
	var out []lease.Record
	damaged := 0
	for rows.Next() {
		var r lease.Record
		var blob []byte
		var expires, forget int64
		if err := rows.Scan(&r.Token, &blob, &expires, &forget, &r.Redeemed); err != nil {
			return nil, j.failed("load", err)
		}
		if err := r.Lease.UnmarshalBinary(blob); err != nil {
			r.Lease, r.Redeemed = lease.Lease{}, true
			damaged++
		}
		r.Expires, r.Forget = time.Unix(0, expires), time.Unix(0, forget)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, j.failed("load", err)
	}
	if damaged > 0 {
		j.d.log.Warn("sqlitepersist: network leases that cannot be decoded are taken as redeemed", "path", j.d.path, "leases", damaged)
	}
	return out, nil
}

// Put implements lease.Journal.
func (j leaseJournal) Put(ctx context.Context, r lease.Record) error {
	blob, err := r.Lease.MarshalBinary()
	if err != nil {
		return j.failed("put", err)
	}
	if _, err := j.d.db.ExecContext(ctx, sqlLeasePut, r.Token, blob, r.Expires.UnixNano(), r.Forget.UnixNano(), r.Redeemed); err != nil {
		return j.failed("put", err)
	}
	return nil
}

// Delete implements lease.Journal.
func (j leaseJournal) Delete(ctx context.Context, token string) error {
	if _, err := j.d.db.ExecContext(ctx, sqlLeaseDelete, token); err != nil {
		return j.failed("delete", err)
	}
	return nil
}

// Trim implements lease.Journal.
func (j leaseJournal) Trim(ctx context.Context, now time.Time) error {
	if _, err := j.d.db.ExecContext(ctx, sqlLeaseTrim, now.UnixNano()); err != nil {
		return j.failed("trim", err)
	}
	return nil
}

// failed wraps an error of the lease journal, explained (a full disk, a
// read-only file) when SQLite tells why.
func (j leaseJournal) failed(what string, err error) error {
	return fmt.Errorf("sqlitepersist: leases: %s: %w", what, sqlitedb.Explain(j.d.path, err))
}
