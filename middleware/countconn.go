package middleware

import (
	"context"
	"errors"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// countConns returns a server that serves each connection with srv,
// wrapped by countConn and with transportName in the Serve context (see
// mcpconv.ContextWithTransport), so that the session, write-error and
// traffic metrics carry the transport label ([Instrumentation.ConnServer]).
// With a nil m it only labels the context.
//
// When srv can also attach sessions (as *server.Server can, see its
// Attach), so can the returned server: Attach then wraps the Conn and
// labels the context as Serve does.
func countConns(srv streamable.Server, m *metrics.Metrics, transportName string) streamable.Server {
	i := instrumented{srv: srv, m: m, name: transportName}
	if a, ok := srv.(transport.Attacher); ok {
		return attachingInstrumented{instrumented: i, a: a}
	}
	return i
}

type attachingInstrumented struct {
	instrumented
	a transport.Attacher
}

func (i attachingInstrumented) Attach(ctx context.Context, conn transport.Driven, done func(error)) error {
	return i.a.Attach(mcpconv.ContextWithTransport(ctx, i.name), countConn(conn, i.m, i.name).(transport.Driven), done)
}

type instrumented struct {
	srv  streamable.Server
	m    *metrics.Metrics
	name string
}

func (i instrumented) Serve(ctx context.Context, conn transport.Conn) error {
	return i.srv.Serve(mcpconv.ContextWithTransport(ctx, i.name), countConn(conn, i.m, i.name))
}

// Shedder passes on srv's Shedder (see server.WithShedder), so that a
// transport that sheds itself asks it; nil when srv has none.
func (i instrumented) Shedder() transport.Shedder {
	if s, ok := i.srv.(transport.ShedderSource); ok {
		return s.Shedder()
	}
	return nil
}

// countConn returns a transport.Conn that counts, in m, every message read
// from and written to c by kind, and their encoded size in bytes, under the
// transport label transportName. The size is the message's compact JSON-RPC
// encoding (what transport.AppendMessage produces, without framing such as a
// newline or SSE fields), counted from the message without encoding it
// ([transport.EncodedSize]). A frame that does not decode counts as kind
// invalid with no bytes. Writes count whether or not they succeed (failures
// are counted by class by the metrics observer). The returned Conn has c's
// concurrency contract, and passes on the capabilities of the Conns of
// Vigil's transports (a Streamable HTTP Conn's messages dispatched on
// their own goroutines are counted as received, like those Read returns);
// with a nil m it returns c.
func countConn(c transport.Conn, m *metrics.Metrics, transportName string) transport.Conn {
	if m == nil {
		return c
	}
	// One allocation per conn: a 2026-07-28 stateless request is a conn
	// of its own.
	cc := countingConn{Conn: c, t: m.Traffic(transportName)}
	if d, ok := c.(transport.Driven); ok {
		return &countingDrivenConn{countingInlineConn{countingConn: cc, in: d}, d}
	}
	if in, ok := c.(transport.Inline); ok {
		return &countingInlineConn{countingConn: cc, in: in}
	}
	return &countingConn{Conn: c, t: cc.t} // not &cc: cc would escape on every path
}

// countingDrivenConn is a countingInlineConn over a transport.Driven Conn,
// which passes on the end of the connection.
type countingDrivenConn struct {
	countingInlineConn
	d transport.Driven
}

func (c *countingDrivenConn) SetEnd(end func(err error)) { c.d.SetEnd(end) }

// countingInlineConn is a countingConn over a transport.Inline Conn: hiding
// SetDispatch would make the session core read every message through Read,
// losing the transport's per-message goroutines (and the end of an HTTP
// request when its response is dropped).
type countingInlineConn struct {
	countingConn
	in   transport.Inline
	next transport.Dispatcher // the receiver's, set by SetDispatch
}

// SetDispatch has c count each message c.in dispatches, then hand it to d.
func (c *countingInlineConn) SetDispatch(d transport.Dispatcher) {
	c.next = d
	c.in.SetDispatch(c)
}

// Dispatch counts msg as received and hands it on (see SetDispatch).
func (c *countingInlineConn) Dispatch(ctx context.Context, msg transport.Message) {
	c.received(msg)
	c.next.Dispatch(ctx, msg)
}

type countingConn struct {
	transport.Conn
	t *metrics.Traffic // the transport's series, resolved once
}

func (c *countingConn) Read(ctx context.Context) (transport.Message, error) {
	msg, err := c.Conn.Read(ctx)
	if err != nil {
		if _, ok := errors.AsType[*transport.DecodeError](err); ok {
			c.t.Received(mcpconv.KindInvalid, 0)
		}
		return msg, err
	}
	c.received(msg)
	return msg, nil
}

// SessionID passes on c's session id (see transport.SessionIDer); "" when
// it has none.
// Unwrap returns the counted Conn (see transport.Wrapper).
func (c *countingConn) Unwrap() transport.Conn { return c.Conn }

func (c *countingConn) SessionID() string {
	if s, ok := c.Conn.(transport.SessionIDer); ok {
		return s.SessionID()
	}
	return ""
}

// received counts a message read or dispatched.
func (c *countingConn) received(msg transport.Message) {
	if kind := messageKind(msg); kind != "" {
		c.t.Received(kind, transport.EncodedSize(msg))
	}
}

func (c *countingConn) Write(ctx context.Context, msg transport.Message) error {
	if kind := messageKind(msg); kind != "" {
		c.t.Sent(kind, transport.EncodedSize(msg))
	}
	return c.Conn.Write(ctx, msg)
}

// Multicast returns the counted Conn's multicast group, counting what it
// sends as this Conn's writes are counted (see transport.MulticastMember);
// nil when the counted Conn has none.
func (c *countingConn) Multicast() transport.Multicast {
	m, ok := c.Conn.(transport.MulticastMember)
	if !ok {
		return nil
	}
	g := m.Multicast()
	if g == nil {
		return nil
	}
	return countedMulticast{g: g, t: c.t} // a value: the group's Conns return equal ones
}

// JoinMulticast joins the counted Conn to its group.
func (c *countingConn) JoinMulticast() {
	if m, ok := c.Conn.(transport.MulticastMember); ok {
		m.JoinMulticast()
	}
}

// countedMulticast counts each notification a multicast group sends, once
// per session it goes to.
type countedMulticast struct {
	g transport.Multicast
	t *metrics.Traffic
}

func (m countedMulticast) Send(ctx context.Context, n *transport.Request) int {
	sent := m.g.Send(ctx, n)
	m.t.SentN(messageKind(n), transport.EncodedSize(n), sent)
	return sent
}

// messageKind returns the kind label of msg, or "" for an event that is not
// a message on the wire (transport.Abandoned).
func messageKind(msg transport.Message) string {
	switch m := msg.(type) {
	case *transport.Request:
		if m.IsNotification() {
			return mcpconv.KindNotification
		}
		return mcpconv.KindRequest
	case *transport.Response:
		return mcpconv.KindResponse
	case transport.Batch, transport.ResponseBatch:
		return mcpconv.KindBatch
	}
	return ""
}
