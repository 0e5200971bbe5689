package transport

import (
	"context"
)

// Inline is implemented by a Conn whose messages arrive on goroutines of
// their own (one HTTP request each). The receiver hands it a [Dispatcher],
// which the Conn then calls with each message on the goroutine
// that brought it, instead of queueing the message for Read: a request's
// handler then runs on that goroutine, with no hand-off. ctx is the
// message's stream: when it is done before the answer is written, the
// request is cancelled (its answer can no longer be delivered); pass a
// context that is never done when the stream may be resumed. dispatch
// returns when the message has been handled (for a request: answered or
// dropped). Read still reports the end of the connection and delivers
// whatever has no goroutine of its own. Close must not block: the receiver
// may call it to end the session from whichever goroutine ends it.
type Inline interface {
	SetDispatch(d Dispatcher)
}

// Dispatcher handles the messages an [Inline] Conn delivers, each on the
// goroutine that brought it (see Inline for ctx). It is an interface, not
// a function, so that a receiver already allocated (a session, a wrapping
// Conn) is handed over as it is, with no closure per connection: a
// 2026-07-28 stateless request is a connection of its own.
type Dispatcher interface {
	Dispatch(ctx context.Context, m Message)
}

// Driven is implemented by an [Inline] Conn that delivers every message
// through its Dispatcher, so that its receiver needs no read loop: a
// session on it holds no goroutine while no message is on its way (see the
// server package's Server.Attach). Read is then never called.
//
// SetEnd registers end, which the Conn calls once when the connection ends
// (Close was called, or the peer left), with the error Read would return
// from then on; it calls end at once if the connection already ended. end
// must not block: it runs on the goroutine that ended the connection. Nor
// may Close block: the receiver calls it to end the session, from whichever
// goroutine ends it. The receiver calls SetDispatch, then SetEnd, once each,
// when it takes the Conn on.
type Driven interface {
	Conn
	Inline
	SetEnd(end func(err error))
}

// SessionIDer is implemented by a Conn whose transport names the session
// itself, such as Streamable HTTP with its Mcp-Session-Id header. A server
// serving the Conn then uses that id as its own, so that the client, the
// server's logs and its traces (mcp.session.id) name the session alike. An
// empty id means the transport has none.
type SessionIDer interface {
	SessionID() string
}
