// Package connstate is what the module keeps of a client's HTTP
// connection, recorded once in the connection's context by
// streamable.ConnContext: the connection itself, whose socket tells the
// shedder how long a request waited and whose address the spans name,
// and the values other packages keep per connection (the OAuth verifiers'
// memo of the last token), each made on first use. It is a leaf: it
// imports nothing of Vigil.
package connstate

import (
	"context"
	"net"
	"sync"
)

// State is one connection's: safe for concurrent use, as the requests of
// an HTTP/2 connection run at once.
type State struct {
	conn   net.Conn
	values sync.Map // key → value, made by Value
}

type stateKey struct{}

// With returns ctx carrying a new State of c (which may be nil in tests).
func With(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, stateKey{}, &State{conn: c})
}

// From returns the State recorded in ctx by With, or nil.
func From(ctx context.Context) *State {
	s, _ := ctx.Value(stateKey{}).(*State)
	return s
}

// Conn returns the connection, nil if With was given none.
func (s *State) Conn() net.Conn { return s.conn }

// Value returns the connection's value for key, made by create from the
// connection on the first call for key; two first calls at once may both
// call create, and both get the value stored first.
func (s *State) Value(key any, create func(c net.Conn) any) any {
	if v, ok := s.values.Load(key); ok {
		return v
	}
	v, _ := s.values.LoadOrStore(key, create(s.conn))
	return v
}
