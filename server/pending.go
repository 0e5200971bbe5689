package server

import (
	"cmp"
	"slices"
	"time"

	"github.com/vigil-mcp/vigil/transport"
)

// PendingRequest is a request in flight at the moment of a [Session.Pending]
// snapshot.
type PendingRequest struct {
	// Outgoing is true for a server-to-client request (the server waits
	// for the client), false for a client request (a handler is running).
	Outgoing bool
	ID       transport.ID
	Method   string
	Name     string // tool or prompt name, for incoming requests that have one
	Started  time.Time
}

// Pending returns a snapshot of the requests in flight, in both directions,
// oldest first. The slice is the caller's; it is a copy, not a view.
func (ss *Session) Pending() []PendingRequest {
	ss.mu.Lock()
	out := make([]PendingRequest, 0, ss.st.incoming.len()+len(ss.st.outgoing))
	for id, inf := range ss.st.incoming.all() {
		out = append(out, PendingRequest{ID: id, Method: inf.req.Method, Name: inf.req.Name, Started: inf.req.Received})
	}
	for id, o := range ss.st.outgoing {
		out = append(out, PendingRequest{Outgoing: true, ID: id, Method: o.method, Started: o.started})
	}
	ss.mu.Unlock()
	slices.SortFunc(out, func(a, b PendingRequest) int {
		return cmp.Or(a.Started.Compare(b.Started), cmp.Compare(a.ID.String(), b.ID.String()))
	})
	return out
}
