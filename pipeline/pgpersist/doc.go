// Package pgpersist keeps the locations table of the pipeline, its memory
// journal and its spots in PostgreSQL, through github.com/jackc/pgx/v5
// (pgxpool), so that several nodes (rtp serve processes) can share one
// database. It implements the same contracts as the embedded back end,
// pipeline/sqlitepersist: DB.Region returns a pipeline.Persister that is
// also a pipeline.Journal, and the DB has the same Open, Flush, Close and
// Stats, with the same writer: Add, Remove, MarkHot and the journal calls
// never wait for the database; the writes to one row coalesce; one writer
// goroutine commits them in batches (Options.BatchDelay; Flush and Close
// at once; urgent hot marks after Options.HotDelay, alone with their
// rows' changes, the others with the batch), one transaction per batch whose statements go out
// as one pgx batch; a failed batch is kept, the writes queued meanwhile
// merge into it, and it is retried with back-off (Options.RetryMin,
// RetryMax); the pending work is bounded (Options.QueueLimit), dropping
// the oldest rows past it. That writer is pipeline/internal/rowqueue,
// shared with sqlitepersist; this package gives it the commit of a
// batch, which answers each hot mark for its own row (see Nodes and
// ownership) and sends the feed's notifications (see Feed).
//
// # Tables
//
// The tables live in Options.Schema (or the connection's search_path):
//
//	schema_version(version)                      one row
//	nodes(name, version, state, started, heartbeat, expires,
//	      software, regions)
//	locations(id, region, key, world, x, y, z, idx, n, hot, owner)
//	discarded(node, region, world, x, y, z, idx, n, id)
//	memory_journal(seq, node, region, idx, cause, source, at)
//	spots(region, x, z, at, node)
//
// (software, regions and spots.node came with schema version 2.) Open
// migrates the schema inside a transaction that first takes
// pg_advisory_xact_lock on a key of the schema's name: nodes starting
// together migrate once, the others wait for the lock and find
// schema_version current. A schema newer than SchemaVersion fails Open.
//
// # Nodes and ownership
//
// Every DB is one node, named by Options.Node (the host name by default;
// the engine adds a random suffix); a name is one process at a time. Open
// registers the node in nodes, adding one to its version (the run), with
// state "running", the Options.Software it reports, no regions yet
// (DB.Region adds each region it opens) and a lease until now +
// Options.LeaseTTL (15 s), which a goroutine renews every
// Options.HeartbeatEvery (LeaseTTL/3). A location row is owned by at most
// one node (owner), and only its owner may hand it out:
//
//   - Add inserts rows owned by the node (unowned once its lease is lost);
//     MarkHot marks a row hot and takes it for the node, unless another
//     node owns it.
//   - Region.ClaimCold claims up to n unowned rows of the region and key,
//     oldest first, with SELECT ... FOR UPDATE SKIP LOCKED in the
//     transaction that sets their owner, so that nodes claiming at once
//     never get the same row. It first checks, holding the nodes row
//     FOR SHARE, that the node's lease is valid.
//   - Region.Load deletes the region's rows of every other key (whoever
//     owns them), claims every unowned row of the region and key and
//     returns the rows the node owns (with a single node: every row, as
//     the pipeline.Persister contract asks).
//   - Close returns the node's claims (owner NULL, hot rows cold) and
//     records state "clean".
//   - Every node sweeps every Options.SweepEvery (default LeaseTTL; the
//     engine asks for a tenth of it): a running node whose lease has
//     lapsed has its hot rows moved to discarded
//     (they may have been handed out) and its other rows returned to the
//     pool, and its state becomes "lapsed" (DB.Sweep). Sweepers lock the
//     nodes rows FOR UPDATE SKIP LOCKED, so each lapsed node is swept once.
//
// A node whose renewal, or the lease check of a claim, finds its lease
// lapsed, or its name taken over by a later run, has lost its lease
// (ErrLeaseLost, Stats.LeaseLost): its cold rows may be another node's by
// now. Its hot marks then fail, ClaimCold and Load return ErrLeaseLost,
// and at each heartbeat it tries to rejoin as a new run of its name (as
// Open would after a crash: its hot rows deleted, its other rows returned
// to the pool, a new lease). Hot marks are checked row by row: a mark matches
// only a row the node owns or nobody owns, and one that matches nothing
// answers pipeline.ErrNotOwned, so an entry whose row another node
// claimed is dropped, never served; Remove likewise leaves other nodes'
// rows alone. The hot entries a node holds stay its own to serve even
// past its lease: a sweep discards hot rows rather than returning them.
// DB.LeaseUntil tells until when the node's cold rows are surely its own:
// the start of its last successful renewal plus the TTL, on its own
// clock, never later than the database's view.
//
// # Feed
//
// Every commit that adds marks or spots notifies FeedChannel with the
// schema and the region's name (pg_notify in the commit's transaction, so
// it is delivered at commit; a listener ignores other schemas'). Region.Feed reads what the other nodes committed past a
// Cursor (FeedStart): marks in each node's Seq order, and spots written by
// other nodes, read again from a few seconds before the latest one seen,
// since the writers' clocks differ. So a rejection or placement learnt on
// one node reaches the others at their next read. DB.Listen listens on
// FeedChannel on a connection of its own, reconnecting with back-off when
// it breaks, and calls back with the region of each notification, so that
// a reader reads at once rather than at its next poll; it also reports
// when it is listening and when not. DB.LiveNodes lists the running nodes
// with a valid lease that serve a region, by name (the engine splits the
// region's screening among them, see pipeline.Pipeline.SetShare), and
// DB.Ping checks that the database answers. Trim keeps a mark until it is
// JournalRetention old (by its time) as well as covered by its node's
// snapshot, so that nodes that start later replay it.
//
// # Recovery
//
// Unclean shutdown is per node, not a flag of the database. An Open that
// finds its node's row not "clean" (the previous run of this name was
// killed, or lapsed and was swept) deletes the node's hot rows, returns
// its other rows, and reports the hot rows, with those a sweep had moved
// to discarded, through Region.Recovery. A rejoin after a lost lease does
// the same. Other nodes and their rows are
// untouched. Opening a name whose lease is still live takes it over (a
// restarted process comes back before its lease lapses) and logs a
// warning: two live processes must not share a name.
//
// # Journal
//
// Marks carry the node that recorded them. Their Seqs come from blocks of
// 2^32 numbers a node reserves from the sequence journal_block at Open
// (so Record never waits for the database, and a node's Seqs grow across
// its runs; only after 2^32 marks in one run does Record wait for a new
// block). Marks returns the region's marks of every node in Seq order;
// Trim deletes only the marks the node itself recorded, which its own
// snapshot covers, and of those only the ones older than
// JournalRetention. Spots are shared by the nodes: a claim of a column
// keeps its latest time, and the node that claimed it then.
//
// # Fleet status
//
// DB.Nodes lists every node that has registered, with its run, state,
// lease, software, regions and the rows it owns (NodeInfo), for a fleet
// status report. ListNodes reads the same for a process that is not a
// node (`rtp fleet status`): it opens a pool of one connection to the
// database, neither migrates the schema nor registers a node, and closes
// the pool before it returns; a database where no node has opened yet
// has no nodes, and a schema newer than SchemaVersion is an error.
package pgpersist
