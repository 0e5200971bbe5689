package transport

import (
	"context"
	"errors"
)

// Shared is a Conn whose session is served by several processes at once:
// the replicas of one service behind a load balancer, any of which may
// receive any of the session's messages. The session's state (what
// initialize negotiated, the log level, the resource subscriptions) is
// kept outside the processes, and each replica's server reads it from
// SharedState, stores its changes with StoreState and learns of the other
// replicas' changes through the function given to SetStateUpdate. Streamable
// HTTP's shared sessions are Shared (see streamable.WithCluster).
//
// The state is the server's to encode; the transport stores it as it is.
type Shared interface {
	Conn
	// Replica names this process among the session's replicas: visible
	// ASCII, unique among them. The server makes the ids of its requests
	// to the client unique across replicas with it.
	Replica() string
	// SharedState returns the state the session's replicas stored last,
	// or nil when none stored one yet: a new session.
	SharedState() []byte
	// StoreState stores the session's state after it changed here; once
	// it returns, every replica that loads the session reads it, and
	// every replica holding the session has applied it (through the
	// function given to SetStateUpdate), so that the client's next
	// request sees the change wherever it lands. A transport may bound
	// that wait for a replica that does not answer, and say so in its log.
	StoreState(ctx context.Context, state []byte) error
	// SetStateUpdate has update called with the state another replica
	// stored, whenever one does, while the session lasts; and at once
	// with one stored since SharedState was read.
	SetStateUpdate(update func(state []byte))
	// Hold keeps this replica serving the session while something of it
	// runs here with no request in flight, such as a 2025 task: the
	// transport does not end the Conn to spare memory (as it may with a
	// session idle here) until release is called. release may be called
	// more than once.
	Hold() (release func())
}

// ErrReleased is in the error of a [Shared] Conn that ended because this
// replica let its view of the session go (to spare memory, or when it
// leaves the cluster): the session goes on through the other replicas, and
// through a new Conn here when a request brings it back. What the server
// keeps of the session beyond the Conn (a task's result) is kept.
var ErrReleased = errors.New("transport: the replica released the shared session, which goes on")

type broadcastKey struct{}

// ContextWithBroadcast returns a copy of ctx marked as that of a message
// the server sends every session and broadcasts to the other replicas (a
// list change, a resource update): the transport of a shared session
// delivers it where it can here, and relays it to no other replica, whose
// server sends it itself.
func ContextWithBroadcast(ctx context.Context) context.Context {
	return context.WithValue(ctx, broadcastKey{}, true)
}

// BroadcastFromContext reports whether ctx was marked by
// [ContextWithBroadcast].
func BroadcastFromContext(ctx context.Context) bool {
	v, _ := ctx.Value(broadcastKey{}).(bool)
	return v
}
