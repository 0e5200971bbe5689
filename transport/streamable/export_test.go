package streamable

// SetMaxSessionBytes is s.setMaxSessionBytes, for the external tests.
func SetMaxSessionBytes(s *MemoryEventStore, n int64) { s.setMaxSessionBytes(n) }
