package server

import (
	"context"

	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Observer receives what the session core knows: how each request ended,
// and what a middleware cannot see. Register it with [WithObserver]. Every
// method may be called concurrently, from the goroutine that found the
// event (RequestEnded: see there); implementations must be fast and must
// not block. Embed [NopObserver] so that methods added later need no
// change.
type Observer interface {
	// RequestEnded is called once for each request (not a notification)
	// with its outcome, once its fate is sealed: after its response was
	// written, or the decision not to write one was made, and after the
	// other methods' calls about it. It sees every request, those the
	// middleware refused too. It is called on the goroutine that sealed
	// the request or, with [WithOutcomeBatches], later, in a batch, on a
	// goroutine of the server's, in the order the requests were sealed,
	// and before [Server.Shutdown] or [Server.Close] returns; it must then
	// take the request's end from out.Ended, not from the clock. ctx is
	// the request's handler context as the server made it (cancelled by
	// then, as a rule).
	RequestEnded(ctx context.Context, req *Request, out Outcome)
	// SessionStarted is called when Serve begins a session. The session a
	// server makes for a conn that carries one request (a 2026-07-28
	// stateless request) is none: it is reported neither started nor
	// ended.
	SessionStarted(ctx context.Context, s *Session)
	// SessionEnded is called once per session, after every handler of the
	// session has returned, with the cause that ended it.
	SessionEnded(ctx context.Context, s *Session, cause error)
	// RequestCancelled is called once for each request whose context was
	// cancelled before its handler returned, with the first cause.
	RequestCancelled(ctx context.Context, req *Request, cause error)
	// ResponseDropped is called once for each request that ended without a
	// response being written, with the reason.
	ResponseDropped(ctx context.Context, req *Request, reason protocol.DropReason)
	// WriteFailed is called for each failed write of a message, with its
	// class: [protocol.DropWriterClosed] (our side closed) or [protocol.DropPeerGone].
	WriteFailed(ctx context.Context, s *Session, class protocol.DropReason, err error)
	// OutgoingFailed is called for each server-to-client request that was
	// still waiting for the client when the session ended.
	OutgoingFailed(ctx context.Context, s *Session, method string, err error)
	// HandlerPanicked is called when a handler panics; the request is then
	// answered with [protocol.CodeInternal]. stack is the goroutine's stack.
	HandlerPanicked(ctx context.Context, req *Request, value any, stack []byte)
	// MessageRejected is called for each incoming message answered with an
	// error before it reached a handler (malformed input, a duplicate id, a
	// limit, a request before initialize), or ignored as unanswerable, with
	// the code it was answered with (0 when it was ignored) and the reason.
	MessageRejected(ctx context.Context, s *Session, code protocol.Code, reason protocol.RejectReason)
}

// NopObserver is an [Observer] that does nothing; embed it to implement only
// some methods.
type NopObserver struct{}

var _ Observer = NopObserver{}

// RequestEnded does nothing.
func (NopObserver) RequestEnded(context.Context, *Request, Outcome) {}

// SessionStarted does nothing.
func (NopObserver) SessionStarted(context.Context, *Session) {}

// SessionEnded does nothing.
func (NopObserver) SessionEnded(context.Context, *Session, error) {}

// RequestCancelled does nothing.
func (NopObserver) RequestCancelled(context.Context, *Request, error) {}

// ResponseDropped does nothing.
func (NopObserver) ResponseDropped(context.Context, *Request, protocol.DropReason) {}

// WriteFailed does nothing.
func (NopObserver) WriteFailed(context.Context, *Session, protocol.DropReason, error) {}

// OutgoingFailed does nothing.
func (NopObserver) OutgoingFailed(context.Context, *Session, string, error) {}

// HandlerPanicked does nothing.
func (NopObserver) HandlerPanicked(context.Context, *Request, any, []byte) {}

// MessageRejected does nothing.
func (NopObserver) MessageRejected(context.Context, *Session, protocol.Code, protocol.RejectReason) {}

// observers returns an [Observer] that tells each of obs, in order, about
// every event. Nil entries are skipped; with none left it returns
// [NopObserver], with one it returns that one.
func observers(obs ...Observer) Observer {
	var list multiObserver
	for _, o := range obs {
		if o != nil {
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return NopObserver{}
	case 1:
		return list[0]
	}
	return list
}

// multiObserver fans every event out to its observers.
type multiObserver []Observer

func (m multiObserver) RequestEnded(ctx context.Context, req *Request, out Outcome) {
	for _, o := range m {
		o.RequestEnded(ctx, req, out)
	}
}

func (m multiObserver) SessionStarted(ctx context.Context, s *Session) {
	for _, o := range m {
		o.SessionStarted(ctx, s)
	}
}

func (m multiObserver) SessionEnded(ctx context.Context, s *Session, cause error) {
	for _, o := range m {
		o.SessionEnded(ctx, s, cause)
	}
}

func (m multiObserver) RequestCancelled(ctx context.Context, req *Request, cause error) {
	for _, o := range m {
		o.RequestCancelled(ctx, req, cause)
	}
}

func (m multiObserver) ResponseDropped(ctx context.Context, req *Request, reason protocol.DropReason) {
	for _, o := range m {
		o.ResponseDropped(ctx, req, reason)
	}
}

func (m multiObserver) WriteFailed(ctx context.Context, s *Session, class protocol.DropReason, err error) {
	for _, o := range m {
		o.WriteFailed(ctx, s, class, err)
	}
}

func (m multiObserver) OutgoingFailed(ctx context.Context, s *Session, method string, err error) {
	for _, o := range m {
		o.OutgoingFailed(ctx, s, method, err)
	}
}

func (m multiObserver) HandlerPanicked(ctx context.Context, req *Request, value any, stack []byte) {
	for _, o := range m {
		o.HandlerPanicked(ctx, req, value, stack)
	}
}

func (m multiObserver) MessageRejected(ctx context.Context, s *Session, code protocol.Code, reason protocol.RejectReason) {
	for _, o := range m {
		o.MessageRejected(ctx, s, code, reason)
	}
}

// wireObservers hands the observers that implement [serverhook.Wired]
// what they need of s: its outcome flush, for a collector to run before
// it is read, and what it serves. New calls it last.
func (s *Server) wireObservers() {
	s.hook = serverhook.Server{ID: s, Flush: s.flushOutcomes, HasMethod: s.hasMethod, Methods: s.servedMethods}
	for _, o := range s.cfg.observers {
		if w, ok := o.(serverhook.Wired); ok {
			w.WireServer(&s.hook)
		}
	}
}

// recordEnd records the outcome out of req, which is sealed: its AfterDone
// functions, then the observers' RequestEnded.
func (s *Server) recordEnd(req *Request, out Outcome) {
	req.ends.RunAfter(out)
	if s.endObserved && !req.IsNotification() {
		s.cfg.observer.RequestEnded(endContext(req), req, out)
	}
}

// endContext returns the context req's RequestEnded is given: its
// handler's, as the chain ran with it, else the one it was cancelled with.
func endContext(req *Request) context.Context {
	switch inf := req.inf; {
	case inf != nil && inf.rctx.req != nil:
		return &inf.rctx
	case inf != nil:
		return inf.ctx
	}
	return context.Background()
}
