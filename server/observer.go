package server

import (
	"context"

	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Observer is a set of hooks that receive what the session core knows:
// how each request ended, and what a middleware cannot see. Register it
// with [WithObserver]; a nil field is not called, and an event no
// observer hooks costs nothing. Every hook may be called concurrently,
// from the goroutine that found the event (RequestEnded: see there);
// hooks must be fast and must not block.
type Observer struct {
	// RequestEnded is called once for each request (not a notification)
	// with its outcome, once its fate is sealed: after its response was
	// written, or the decision not to write one was made, and after the
	// other hooks' calls about it. It sees every request, those the
	// middleware refused too. It is called on the goroutine that sealed
	// the request or, with [WithOutcomeBatches], later, in a batch, on a
	// goroutine of the server's, in the order the requests were sealed,
	// and before [Server.Shutdown] or [Server.Close] returns; it must then
	// take the request's end from out.Ended, not from the clock. ctx is
	// the request's handler context as the server made it (cancelled by
	// then, as a rule).
	RequestEnded func(ctx context.Context, req *Request, out Outcome)
	// SessionStarted is called when Serve begins a session. The session a
	// server makes for a conn that carries one request (a 2026-07-28
	// stateless request) is none: it is reported neither started nor
	// ended.
	SessionStarted func(ctx context.Context, s *Session)
	// SessionEnded is called once per session, after every handler of the
	// session has returned, with the cause that ended it.
	SessionEnded func(ctx context.Context, s *Session, cause error)
	// RequestCancelled is called once for each request whose context was
	// cancelled before its handler returned, with the first cause.
	RequestCancelled func(ctx context.Context, req *Request, cause error)
	// ResponseDropped is called once for each request that ended without a
	// response being written, with the reason.
	ResponseDropped func(ctx context.Context, req *Request, reason protocol.DropReason)
	// WriteFailed is called for each failed write of a message, with its
	// class: [protocol.DropWriterClosed] (our side closed) or [protocol.DropPeerGone].
	WriteFailed func(ctx context.Context, s *Session, class protocol.DropReason, err error)
	// OutgoingFailed is called for each server-to-client request that was
	// still waiting for the client when the session ended.
	OutgoingFailed func(ctx context.Context, s *Session, method string, err error)
	// HandlerPanicked is called when a handler panics; the request is then
	// answered with [protocol.CodeInternal]. stack is the goroutine's stack.
	HandlerPanicked func(ctx context.Context, req *Request, value any, stack []byte)
	// MessageRejected is called for each incoming message answered with an
	// error before it reached a handler (malformed input, a duplicate id, a
	// limit, a request before initialize), or ignored as unanswerable, with
	// the code it was answered with (0 when it was ignored) and the reason.
	MessageRejected func(ctx context.Context, s *Session, code protocol.Code, reason protocol.RejectReason)
}

// observers is the hooks of a server's observers, combined by New: for
// each event, the non-nil hooks, in the order the observers were given.
// Its methods call them; an event without hooks costs a length check.
type observers struct {
	requestEnded     []func(context.Context, *Request, Outcome)
	sessionStarted   []func(context.Context, *Session)
	sessionEnded     []func(context.Context, *Session, error)
	requestCancelled []func(context.Context, *Request, error)
	responseDropped  []func(context.Context, *Request, protocol.DropReason)
	writeFailed      []func(context.Context, *Session, protocol.DropReason, error)
	outgoingFailed   []func(context.Context, *Session, string, error)
	handlerPanicked  []func(context.Context, *Request, any, []byte)
	messageRejected  []func(context.Context, *Session, protocol.Code, protocol.RejectReason)
}

// combineObservers returns the hooks of obs, event by event.
func combineObservers(obs []Observer) observers {
	var o observers
	for _, ob := range obs {
		if ob.RequestEnded != nil {
			o.requestEnded = append(o.requestEnded, ob.RequestEnded)
		}
		if ob.SessionStarted != nil {
			o.sessionStarted = append(o.sessionStarted, ob.SessionStarted)
		}
		if ob.SessionEnded != nil {
			o.sessionEnded = append(o.sessionEnded, ob.SessionEnded)
		}
		if ob.RequestCancelled != nil {
			o.requestCancelled = append(o.requestCancelled, ob.RequestCancelled)
		}
		if ob.ResponseDropped != nil {
			o.responseDropped = append(o.responseDropped, ob.ResponseDropped)
		}
		if ob.WriteFailed != nil {
			o.writeFailed = append(o.writeFailed, ob.WriteFailed)
		}
		if ob.OutgoingFailed != nil {
			o.outgoingFailed = append(o.outgoingFailed, ob.OutgoingFailed)
		}
		if ob.HandlerPanicked != nil {
			o.handlerPanicked = append(o.handlerPanicked, ob.HandlerPanicked)
		}
		if ob.MessageRejected != nil {
			o.messageRejected = append(o.messageRejected, ob.MessageRejected)
		}
	}
	return o
}

func (o *observers) SessionStarted(ctx context.Context, s *Session) {
	for _, f := range o.sessionStarted {
		f(ctx, s)
	}
}

func (o *observers) SessionEnded(ctx context.Context, s *Session, cause error) {
	for _, f := range o.sessionEnded {
		f(ctx, s, cause)
	}
}

func (o *observers) RequestCancelled(ctx context.Context, req *Request, cause error) {
	for _, f := range o.requestCancelled {
		f(ctx, req, cause)
	}
}

func (o *observers) ResponseDropped(ctx context.Context, req *Request, reason protocol.DropReason) {
	for _, f := range o.responseDropped {
		f(ctx, req, reason)
	}
}

func (o *observers) WriteFailed(ctx context.Context, s *Session, class protocol.DropReason, err error) {
	for _, f := range o.writeFailed {
		f(ctx, s, class, err)
	}
}

func (o *observers) OutgoingFailed(ctx context.Context, s *Session, method string, err error) {
	for _, f := range o.outgoingFailed {
		f(ctx, s, method, err)
	}
}

func (o *observers) HandlerPanicked(ctx context.Context, req *Request, value any, stack []byte) {
	for _, f := range o.handlerPanicked {
		f(ctx, req, value, stack)
	}
}

func (o *observers) MessageRejected(ctx context.Context, s *Session, code protocol.Code, reason protocol.RejectReason) {
	for _, f := range o.messageRejected {
		f(ctx, s, code, reason)
	}
}

// wireObservers hands the options that implement [serverhook.Wired]
// (those with which package middleware and the live page register their
// observers) what they need of s: its outcome flush, for a collector to
// run before it is read, and what it serves. New calls it last.
func (s *Server) wireObservers(wired []serverhook.Wired) {
	s.hook = serverhook.Server{ID: s, Flush: s.flushOutcomes, HasMethod: s.hasMethod, Methods: s.servedMethods}
	for _, w := range wired {
		w.WireServer(&s.hook)
	}
}

// recordEnd records the outcome out of req, which is sealed: its AfterDone
// functions, then the observers' RequestEnded.
func (s *Server) recordEnd(req *Request, out Outcome) {
	req.ends.RunAfter(out)
	if s.endObserved && !req.IsNotification() {
		ctx := endContext(req)
		for _, f := range s.obs.requestEnded {
			f(ctx, req, out)
		}
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
