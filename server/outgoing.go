package server

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// outgoing is one server-to-client request waiting for its answer.
type outgoing struct {
	method  string
	started time.Time
	ch      chan *transport.Response // 1-buffered; nil response: the session ended
}

// capabilityFor names the client capability a server-to-client method needs.
func capabilityFor(caps ClientCapabilities, method string) (string, bool) {
	switch method {
	case "roots/list":
		return "roots", caps.Roots != nil
	case "sampling/createMessage":
		return "sampling", caps.Sampling != nil
	case "elicitation/create":
		return "elicitation", caps.Elicitation != nil
	}
	return "", true
}

// Call sends a request to the client and waits for its answer, which it
// decodes into result (when result is non-nil). It refuses, with an error
// wrapping [ErrCapability], a method whose capability the client did not
// declare (roots/list, sampling/createMessage, elicitation/create), and with
// [ErrNotInitialized] anything but ping before the client's
// notifications/initialized.
//
// Call returns when the client answers (an error answer is an [*Error]), when
// ctx is done or the call timeout passes (the client is then sent
// notifications/cancelled and the error is ctx's cause), or when the session
// ends (an error wrapping [ErrConnectionClosed] and the session's cause).
// Pass the handler's context so that a cancelled request stops waiting too.
// The call passes through the server's call middleware (see
// [WithCallMiddleware]).
func (ss *Session) Call(ctx context.Context, method string, params, result any) error {
	c := &ClientCall{Session: ss, Method: method, Params: params, Result: result}
	return ss.srv.callChain(ss.send)(ctx, c) // clientcall.go
}

// send is Call past the call middleware.
func (ss *Session) send(ctx context.Context, c *ClientCall) error {
	method, result := c.Method, c.Result
	raw, err := encodeParams(ctx, method, c.Params)
	if err != nil {
		return err
	}
	raw = withCallMeta(raw, c.Meta) // callmiddleware.go
	o := &outgoing{method: method, started: time.Now(), ch: make(chan *transport.Response, 1)}
	ss.mu.Lock()
	if ss.st.closed || ss.ctx.Err() != nil {
		ss.mu.Unlock()
		return ss.closedError()
	}
	if ss.st.phase != phaseReady && method != "ping" {
		ss.mu.Unlock()
		return fmt.Errorf("%w: cannot send %s before notifications/initialized", ErrNotInitialized, method)
	}
	if name, ok := capabilityFor(ss.st.caps, method); !ok {
		ss.mu.Unlock()
		return fmt.Errorf("%w: %s needs the %q capability", ErrCapability, method, name)
	}
	ss.st.nextID++
	id := ss.outgoingID(ss.st.nextID)
	if ss.st.outgoing == nil {
		ss.st.outgoing = make(map[transport.ID]*outgoing, 1)
	}
	ss.st.outgoing[id] = o
	ss.mu.Unlock()
	c.ID = id

	if d := ss.srv.cfg.callTimeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d,
			fmt.Errorf("mcp: %s: no answer from the client within %v: %w", method, d, context.DeadlineExceeded))
		defer cancel()
	}
	if err := ss.write(related(ctx), &transport.Request{ID: id, Method: method, Params: raw}); err != nil {
		ss.forget(id)
		return fmt.Errorf("%w: %w", ErrConnectionClosed, err)
	}
	select {
	case resp := <-o.ch:
		return ss.decodeAnswer(method, resp, result)
	case <-ss.ctx.Done():
		return ss.closedError()
	case <-ctx.Done():
		if ss.ctx.Err() != nil {
			// The session is ending: end() fails and reports the entry
			// from its snapshot of the table.
			return ss.closedError()
		}
		if ss.forget(id) {
			ss.notifyCancelled(id, context.Cause(ctx))
		}
		return context.Cause(ctx)
	}
}

func (ss *Session) decodeAnswer(method string, resp *transport.Response, result any) error {
	if resp == nil {
		return ss.closedError()
	}
	if resp.Error != nil {
		return &Error{Code: protocol.Code(resp.Error.Code), Message: resp.Error.Message, Data: resp.Error.Data}
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(resp.Result, result); err != nil {
		return fmt.Errorf("mcp: %s: malformed result from the client: %w", method, err)
	}
	return nil
}

// forget removes an outgoing request; it reports whether it was still there.
func (ss *Session) forget(id transport.ID) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	_, ok := ss.st.outgoing[id]
	ss.dropOutgoingLocked(id)
	return ok
}

// notifyCancelled tells the client to stop working on our request id.
func (ss *Session) notifyCancelled(id transport.ID, cause error) {
	params, _ := json.Marshal(struct {
		RequestID transport.ID `json:"requestId"`
		Reason    string       `json:"reason,omitempty"`
	}{id, cause.Error()})
	_ = ss.write(ss.ctx, &transport.Request{Method: "notifications/cancelled", Params: params})
}

// answer routes a response from the client to the Call waiting for it.
func (ss *Session) answer(m *transport.Response) {
	ss.mu.Lock()
	o := ss.st.outgoing[m.ID]
	ss.dropOutgoingLocked(m.ID)
	ss.mu.Unlock()
	if o == nil {
		ss.obs.MessageRejected(ss.ctx, ss, 0, protocol.RejectUnknownResponse)
		return
	}
	o.ch <- m
}

// Notify sends a notification to the client. It is best effort: after the
// session ended, or once its writer failed, it returns an error and sends
// nothing; it never panics.
func (ss *Session) Notify(ctx context.Context, method string, params any) error {
	raw, err := encodeParams(ctx, method, params)
	if err != nil {
		return err
	}
	return ss.sendNotification(related(ctx), &transport.Request{Method: method, Params: raw})
}

// sendNotification writes n, unless the session is closed or broken.
func (ss *Session) sendNotification(ctx context.Context, n *transport.Request) error {
	ss.mu.Lock()
	closed := ss.st.closed || ss.st.broken != protocol.DropNone
	ss.mu.Unlock()
	if closed {
		return ss.closedError()
	}
	return ss.write(ctx, n)
}

// related marks ctx with the id of the request it belongs to, if any, so
// that transports can route the message to that request's stream.
func related(ctx context.Context) context.Context {
	if id, ok := taskRoute(ctx); ok { // a task outlives its request (tasks.go)
		if id.IsValid() {
			return transport.ContextWithRelatedRequest(ctx, id)
		}
		return ctx
	}
	if req := RequestFromContext(ctx); req != nil && req.ID.IsValid() {
		return transport.ContextWithRelatedRequest(ctx, req.ID)
	}
	return ctx
}

// encodeParams encodes the params of a message to the client (nil: none),
// tied to the task of ctx, if any (see withRelatedTask).
func encodeParams(ctx context.Context, method string, params any) (json.RawMessage, error) {
	var raw json.RawMessage
	if params != nil {
		var err error
		if raw, err = json.Marshal(params); err != nil {
			return nil, fmt.Errorf("mcp: %s: encoding params: %w", method, err)
		}
	}
	return withRelatedTask(ctx, raw), nil // tasks.go
}

// dropOutgoingLocked removes outgoing request id, if there; ss.mu is held.
func (ss *Session) dropOutgoingLocked(id transport.ID) {
	delete(ss.st.outgoing, id)
	if len(ss.st.outgoing) == 0 {
		ss.st.outgoing = nil // an idle session keeps no table
	}
}
