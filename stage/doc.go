// Package stage provides the stages of a location cache pipeline: bounded
// buffers with deterministic, terminal disposal (Stage, implemented by Ring
// and Queue), stages partitioned by key (Keyed), and the transitions that
// move entries between stages with an explicit outcome (Transition,
// Outcome, Reason).
//
// The package is generic and knows nothing of worlds, chunks or sinks: an
// entry is any T, and what it holds (a reservation on a resident chunk, for
// a hot stage) is released by the stage's OnDispose hook. Package pipeline
// builds the backlog, cold and hot stages, the hot sinks and the allocator
// on top of it.
//
// # Ownership
//
// An entry has exactly one owner at a time. Offer and OfferSilent take
// ownership whatever they return: the entry is either stored or disposed,
// never dropped and never left with the caller. Poll and PollSilent give
// ownership of the removed entry, and of everything it holds, to the caller.
// Disposal is terminal: OnDispose ends an entry, and no stage ever hands an
// entry on after disposing it. Close disposes what is stored and recycles
// nothing.
//
// # Hooks
//
// OnAdd and OnRemove are persistence callbacks: a row exists for every entry
// that is in the pipeline, from its ingress (Offer) until it leaves by Poll
// or by disposal. Internal movement (PollSilent, then OfferSilent into the
// next stage) keeps the row and fires nothing. Which operation fires what:
//
//	operation                   stored / removed     refused (full or closed)
//	Offer(v)                    OnAdd                OnDispose (1)
//	OfferSilent(v)              -                    OnRemove, OnDispose
//	Poll()                      OnRemove             -
//	PollSilent()                -                    -
//	Dispose(v)                  OnRemove, OnDispose
//	Resize(n) surplus, Close()  OnRemove, OnDispose for each entry ended
//
// (1) OnAdd runs before the entry becomes visible to pollers, so OnRemove
// for an entry never runs before its OnAdd. If a concurrent producer takes
// the last place after OnAdd ran, the refused Offer fires OnAdd, OnRemove,
// OnDispose; the row count stays exact.
//
// Every entry given to a stage is, in the end, either taken out by exactly
// one Poll or PollSilent or disposed exactly once; the contract suite in
// package stagetest checks this under concurrent producers, consumers,
// resizes and Close.
//
// # Transitions
//
// A transition takes an entry its caller has already removed from the source
// stage (so a failed promotion cannot duplicate it) and returns an Outcome:
// Promoted with the new entry, or a rejection with a Reason from the
// fixed list and a detail. Transition.Run turns an error or a panic of the
// transition into a rejection with ReasonError, logs it at warning level
// with log/slog, and disposes the source entry through the source stage.
//
// # Concurrency
//
// Every stage type is safe for concurrent use. Hooks run on the goroutine
// of the operation that fires them and never under a lock of the stage.
// Capacity is advisory under concurrency, as the seed allows: a Ring may
// refuse an entry while a concurrent Poll on the same slot is half done.
package stage
