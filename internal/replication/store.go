package replication

import (
	"errors"
	"time"
)

// Event is one stored SSE event (streamable.Event is this type).
type Event struct {
	// ID is the id Append returned for the event.
	ID string
	// Data is one encoded JSON-RPC message, or empty for a priming event.
	Data []byte
}

// The errors of a session store, which streamable exports under the same
// names (streamable.ErrUnknownSession, streamable.ErrUnknownEvent).
var (
	// ErrUnknownSession is wrapped by the errors of a store for a
	// session that does not exist: never created, deleted or expired.
	ErrUnknownSession = errors.New("streamable: unknown session")
	// ErrUnknownEvent is wrapped by the errors of an event store's
	// Replay for an event id the store does not know in the session.
	ErrUnknownEvent = errors.New("streamable: unknown event id")
)

// DefaultInitTimeout is streamable.DefaultInitTimeout, which a store's
// records of sessions not yet initialized live for by default.
const DefaultInitTimeout = time.Minute

// NeverIdleTTL is how long a cluster's session records live without a
// Touch when the Endpoint's sessions never idle out (its idle timeout
// <= 0): finite, so that the records of a replica that died go.
const NeverIdleTTL = 30 * time.Minute

// Expiring is a [Cluster] whose session records expire.
// streamable.New hands it the Endpoint's idle and init timeouts
// (WithIdleTimeout's, <= 0 when sessions never idle out, and
// WithInitTimeout's) once, before the Endpoint creates any session: a
// record then lives for idle ([NeverIdleTTL] when idle <= 0) after its
// last Touch, and a new record for the shorter of init and that until its
// first. The Endpoint's options are the one source of both.
type Expiring interface {
	SetSessionTimeouts(idle, init time.Duration)
}

// EventsAs returns events as another package's type of the same fields
// (streamable.Event, which a package under internal/ cannot name).
func EventsAs[E ~struct {
	ID   string
	Data []byte
}](events []Event) []E {
	out := make([]E, len(events))
	for i, e := range events {
		out[i] = E(e)
	}
	return out
}
