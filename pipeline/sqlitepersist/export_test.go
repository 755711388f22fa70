package sqlitepersist

// Abandon closes d as a killed process would leave it: every write queued
// is committed, but the run is not recorded as clean.
func Abandon(d *DB) error {
	d.abandon = true
	return d.Close()
}
