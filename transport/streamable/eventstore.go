package streamable

import (
	"context"

	"github.com/vigil-mcp/vigil/internal/replication"
)

// EventStore keeps the SSE events a [Endpoint] sends on the streams of its
// 2025-era sessions, so that a client that lost a stream can resume it: a
// GET with Last-Event-ID replays the events of that stream after that id.
// Configure one with [WithEventStore]; [NewMemoryEventStore] is a bounded
// in-memory store.
//
// A stream is named by a key the Endpoint chooses, unique within its session
// (visible ASCII). Events are scoped by session: an id of one session is
// unknown to every other.
//
// Implementations must be safe for concurrent use. The Endpoint appends the
// events of one stream one at a time, in order; those of different streams
// concurrently.
type EventStore interface {
	// Append stores the next event of stream in session and returns its id.
	// data is the event's data, one encoded JSON-RPC message, or empty for
	// a priming event; the store may keep data, which the Endpoint never
	// modifies afterwards. The id must be visible ASCII (0x21-0x7E), unique
	// among the session's events, and tell Replay which stream it belongs
	// to. An error means the event was not stored.
	Append(ctx context.Context, session, stream string, data []byte) (id string, err error)
	// Replay returns the stream that event lastID of session belongs to,
	// and that stream's events stored after lastID, oldest first; never an
	// event of another stream. A store that dropped events (to bound its
	// size) returns those it still has. It returns an error wrapping
	// [ErrUnknownEvent] when lastID is not an event of session that it
	// knows. The caller only reads the events' Data.
	Replay(ctx context.Context, session, lastID string) (stream string, events []Event, err error)
	// Forget drops every event of session, which has ended.
	Forget(ctx context.Context, session string) error
}

// Event is one stored SSE event.
type Event struct {
	// ID is the id Append returned for the event.
	ID string
	// Data is one encoded JSON-RPC message, or empty for a priming event.
	Data []byte
}

// ErrUnknownEvent is wrapped by [EventStore.Replay] errors for an event id
// the store does not know in the session: never issued there, malformed, or
// of a stream whose events were all dropped.
var ErrUnknownEvent = replication.ErrUnknownEvent

// ErrUnknownSession is wrapped by the errors of the shared mode's store
// (see [WithCluster]) for a session that does not exist: never created,
// deleted or expired; and by those of a client connection ([Dial]) whose
// server answered 404 for its session.
var ErrUnknownSession = replication.ErrUnknownSession
