package claims

// ListenerPID returns the PostgreSQL backend process of s's following
// connection, 0 while it is down or when s is not a PostgreSQL store.
func ListenerPID(s *Store) uint32 {
	if b, ok := s.be.(*pgBackend); ok {
		return b.f.pid.Load()
	}
	return 0
}
