package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"iter"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
)

// RequestMeta is a request's params._meta: its members by name, raw, such
// as progressToken, traceparent and the io.modelcontextprotocol/ keys a
// 2026-07-28 request carries. A name given more than once has its last
// value, as json.Unmarshal into a map would give it. The zero value is an
// absent (or empty) _meta.
//
// It is read in place: the values alias the request's Params, and the
// first members are held in the RequestMeta itself, so that a request's
// _meta costs no map and no allocation (every 2026-07-28 request has
// one). Use a *RequestMeta (req.Meta.Get): a RequestMeta is over a hundred
// bytes.
type RequestMeta struct {
	held [heldMetaMembers]metaMember // the first members, in order
	n    int                         // members in held
	more *[]metaMember               // the rest, in order; nil when none
}

// heldMetaMembers is how many members a RequestMeta holds without
// allocating: a 2026-07-28 request carries two or three (its protocol
// version, client capabilities and client info). With three, and the
// rest behind a pointer, the record that holds a request while it runs
// (inflight, a Request inside) stays in the allocator's 1,152-byte class;
// four took it to the 1,280-byte one.
const heldMetaMembers = 3

// metaMember is one member of a RequestMeta.
type metaMember struct {
	name string
	raw  json.RawMessage
}

// Get returns the raw value of the member name, and whether there is one.
func (m *RequestMeta) Get(name string) (json.RawMessage, bool) {
	if p := m.find(name); p != nil {
		return p.raw, true
	}
	return nil, false
}

// Len returns the number of members (names).
func (m *RequestMeta) Len() int { return m.n + len(m.rest()) }

// rest returns the members beyond held.
func (m *RequestMeta) rest() []metaMember {
	if m.more == nil {
		return nil
	}
	return *m.more
}

// All yields the members, each name once, in the order the request first
// gave them.
func (m *RequestMeta) All() iter.Seq2[string, json.RawMessage] {
	return func(yield func(string, json.RawMessage) bool) {
		for i := range m.n {
			if !yield(m.held[i].name, m.held[i].raw) {
				return
			}
		}
		for _, p := range m.rest() {
			if !yield(p.name, p.raw) {
				return
			}
		}
	}
}

// UnmarshalJSON sets m to data, a params._meta object, read as the server
// reads a request's: for a [Request] made by hand, as in a test of
// middleware. It fails, leaving m as it was, when data is not a JSON
// object. m keeps a copy of data.
func (m *RequestMeta) UnmarshalJSON(data []byte) error {
	raw := bytes.Clone(data)
	var meta RequestMeta
	if !jsonscan.Valid(raw) || !jsonscan.EachMember(raw, func(name, val []byte) {
		meta.set(metaKey(name), val[:len(val):len(val)])
	}) {
		return errors.New("mcp: _meta is not a JSON object")
	}
	*m = meta
	return nil
}

// find returns the member name, or nil.
func (m *RequestMeta) find(name string) *metaMember {
	for i := range m.n {
		if m.held[i].name == name {
			return &m.held[i]
		}
	}
	rest := m.rest()
	for i := range rest {
		if rest[i].name == name {
			return &rest[i]
		}
	}
	return nil
}

// set sets the member name to raw: in place when it is there already (a
// repeated name: the last value wins), else after the others.
func (m *RequestMeta) set(name string, raw json.RawMessage) {
	if p := m.find(name); p != nil {
		p.raw = raw
		return
	}
	if m.n < heldMetaMembers {
		m.held[m.n] = metaMember{name: name, raw: raw}
		m.n++
		return
	}
	if m.more == nil {
		m.more = new([]metaMember)
	}
	*m.more = append(*m.more, metaMember{name: name, raw: raw})
}

// without returns a copy of m without the members names; it shares
// nothing with m that either may change.
func (m *RequestMeta) without(names ...string) RequestMeta {
	var c RequestMeta
	for name, raw := range m.All() {
		drop := false
		for _, n := range names {
			drop = drop || name == n
		}
		if !drop {
			c.set(name, raw)
		}
	}
	return c
}
