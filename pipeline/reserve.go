package pipeline

// Kinds of reservation failure, counted in Stats.ReservationFailures.
const (
	reserveTimeout = iota
	reserveUngenerated
	reserveOutside
	reserveUnreadable
	numReserveFailures
)

var reserveFailureNames = [numReserveFailures]string{
	reserveTimeout:     "timeout",
	reserveUngenerated: "ungenerated",
	reserveOutside:     "outside",
	reserveUnreadable:  "unreadable",
}
