package server

import (
	"iter"

	"github.com/vigil-mcp/vigil/transport"
)

// incomingSet is a session's requests in flight, by id. A session serving
// one request at a time (every stateless request's, and most 2025
// sessions') holds it in a field; a map is made only when a second request
// runs beside the first, and is kept from then on.
type incomingSet struct {
	oneID transport.ID
	one   *inflight // nil when empty or when byID holds them
	byID  map[transport.ID]*inflight
}

// get returns the request in flight with id, or nil.
func (s *incomingSet) get(id transport.ID) *inflight {
	if s.one != nil && s.oneID == id {
		return s.one
	}
	return s.byID[id]
}

// add adds inf, whose id is not in the set, as id.
func (s *incomingSet) add(id transport.ID, inf *inflight) {
	switch {
	case s.byID != nil:
		s.byID[id] = inf
	case s.one == nil:
		s.oneID, s.one = id, inf
	default:
		s.byID = map[transport.ID]*inflight{s.oneID: s.one, id: inf}
		s.oneID, s.one = transport.ID{}, nil
	}
}

// remove removes the request with id, if any.
func (s *incomingSet) remove(id transport.ID) {
	if s.one != nil && s.oneID == id {
		s.oneID, s.one = transport.ID{}, nil
		return
	}
	delete(s.byID, id)
}

// len returns the number of requests in flight.
func (s *incomingSet) len() int {
	if s.one != nil {
		return 1
	}
	return len(s.byID)
}

// all yields the requests in flight, in no set order.
func (s *incomingSet) all() iter.Seq2[transport.ID, *inflight] {
	return func(yield func(transport.ID, *inflight) bool) {
		if s.one != nil {
			yield(s.oneID, s.one)
			return
		}
		for id, inf := range s.byID {
			if !yield(id, inf) {
				return
			}
		}
	}
}
