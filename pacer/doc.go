// Package pacer admits and paces the background work of a process that
// must also answer requests at once: the refill of rtp's caches
// (screenings, promotions, the location writer's transactions).
//
// A Gate bounds how many units of that work run at once, lets the work a
// request waits on (urgent) go before the rest (background), and, while
// requests come and its clients report their caches full, makes each
// lane rest between short stretches of work, so that a request never
// waits long for a processor behind the refill. The clients (pipelines)
// report how full they are with Gate.Report; the work itself takes a
// Turn (Gate.Enter, Gate.EnterBackground, Gate.Promise), yields inside
// long units (Turn.Yield) and gives its lane back (Turn.Leave).
//
// The package knows nothing of what the work is: package pipeline holds
// a Gate in its Options, and the persisters take their writer's turns
// from the same one.
package pacer
