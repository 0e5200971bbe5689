package server

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/transport"
)

// TestIncomingSet checks the set through its shapes: empty, one request in
// its field, a map once a second runs beside it, and back to empty.
func TestIncomingSet(t *testing.T) {
	var s incomingSet
	id1, id2, id3 := transport.Int64ID(1), transport.StringID("1"), transport.Int64ID(3)
	a, b, c := &inflight{}, &inflight{}, &inflight{}
	check := func(want map[transport.ID]*inflight) {
		t.Helper()
		assert.Equal(t, len(want), s.len())
		assert.Equal(t, want, maps.Collect(s.all()))
		for id, inf := range want {
			assert.Same(t, inf, s.get(id))
		}
	}
	check(map[transport.ID]*inflight{})
	assert.Nil(t, s.get(id1))

	s.add(id1, a)
	check(map[transport.ID]*inflight{id1: a})
	assert.Nil(t, s.get(id2), "the string id \"1\" is not the number 1")
	assert.Nil(t, s.byID, "one request: no map")
	s.remove(id2) // not there: nothing happens
	check(map[transport.ID]*inflight{id1: a})

	s.add(id2, b)
	s.add(id3, c)
	check(map[transport.ID]*inflight{id1: a, id2: b, id3: c})
	s.remove(id1)
	check(map[transport.ID]*inflight{id2: b, id3: c})
	s.remove(id2)
	s.remove(id3)
	check(map[transport.ID]*inflight{})

	s.add(id1, a) // the map stays, and serves
	check(map[transport.ID]*inflight{id1: a})
	s.remove(id1)
	check(map[transport.ID]*inflight{})
}
