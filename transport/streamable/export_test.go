package streamable

import "net/http"

// SetMaxSessionBytes is s.setMaxSessionBytes, for the external tests.
func SetMaxSessionBytes(s EventStore, n int64) { s.(*memoryEventStore).setMaxSessionBytes(n) }

// HeldBytes returns the bytes caller holds of its byte quota, and all
// callers of the memory budget, for the external tests.
func HeldBytes(h *Endpoint, caller string) (held, total int) {
	return h.quotas.bytes.Held(caller), h.quotas.total.Held(totalKey)
}

// StoreSize is s.size: the number of events s keeps and their total size.
func StoreSize(s EventStore) (events int, bytes int64) { return s.(*memoryEventStore).size() }

// OnHeld has h call f each time it holds a notifications/cancelled until
// the request's stream closes, for the external tests.
func OnHeld(h *Endpoint, f func()) { h.onHeld = f }

// PlainTransport is newPlainTransport, the RoundTripper of
// [NewHTTPClient], over fallback.
func PlainTransport(fallback *http.Transport, maxIdle int) http.RoundTripper {
	return newPlainTransport(fallback, maxIdle)
}
