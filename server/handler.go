package server

import (
	"context"
	"encoding/json"
	"time"

	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Handler handles one JSON-RPC request or notification. For a request it
// returns the result (marshaled with encoding/json; nil means an empty
// object) or an error; for a notification both are ignored. ctx is cancelled,
// with a cause from this package, when the request can no longer be answered.
type Handler func(ctx context.Context, req *Request) (result any, err error)

// Middleware returns a Handler that wraps its argument, the rest of the
// chain; the Handler it returns must be safe for concurrent use.
type Middleware func(Handler) Handler

// chain composes middleware so that mw[0] runs first (outermost). Nil entries
// are skipped; chain() is the identity.
func chain(mw ...Middleware) Middleware {
	return func(h Handler) Handler {
		for i := len(mw) - 1; i >= 0; i-- {
			if mw[i] != nil {
				h = mw[i](h)
			}
		}
		return h
	}
}

// Request is one incoming request or notification as handlers and middleware
// see it. The core fills it before the chain runs; middleware may read every
// field and must not modify them.
type Request struct {
	ID       transport.ID    // zero for a notification
	Method   string          // e.g. "tools/call"
	Params   json.RawMessage // nil when absent
	Session  *Session        // the session it arrived on
	Received time.Time       // when the core read it
	// Name is the tool name of tools/call and the prompt name of
	// prompts/get, read from Params before the chain runs (for span names
	// and metric labels); empty otherwise.
	Name string
	// URI is the resource URI of resources/read, resources/subscribe and
	// resources/unsubscribe; empty otherwise.
	URI string
	// Meta is the request's params._meta, by name, raw (progressToken,
	// traceparent, ...): req.Meta.Get(name). Empty when absent.
	Meta RequestMeta
	// Protocol is the protocol version that governs the request: the
	// session's negotiated version ("" before initialize), or for a
	// stateless request the version in its _meta.
	Protocol string
	// ClientCapabilities and ClientInfo are what the client declared: in
	// initialize for a session, or in this request's _meta for a stateless
	// request (see InSession).
	ClientCapabilities ClientCapabilities
	ClientInfo         Implementation

	era      era    // speaks for the request's protocol era; chosen in newRequest (era.go)
	admitErr *Error // why a stateless request cannot be admitted
	parsed   bool   // Params decoded in newRequest: args, task and round are set
	round    bool   // Params has a member of a retried round (see plainRound)
	// viaCallTool: a call_tool read as a call of the tool it names
	// (tool_search.go); Params are that call's.
	viaCallTool bool
	args        json.RawMessage
	task        json.RawMessage

	arrival context.Context // see ArrivalContext; nil: the session's
	inf     *inflight       // the request's place in its session while it runs; nil for a notification

	// ends are the functions the instrumentation's middleware has run
	// with the request's outcome (serverhook.Of, through the handler's
	// context).
	ends serverhook.Ends[Outcome]
	// The request's place among those waiting for their outcome to be
	// recorded (outcomeBatches): the next older one, how many wait with
	// it, and its outcome.
	afterNext  *Request
	afterDepth int32
	maxResult  int32 // bounds the encoded result (set by the methods bounded, limits.go; 0: none), in afterDepth's padding
	afterOut   Outcome

	// call is the first tools/call view callTool makes of the request,
	// held here rather than allocated; callHeld: it was handed out (a
	// second call gets one of its own).
	call     CallToolRequest
	callHeld bool
	// heavy: its params and result together are at least heavyOutcome
	// bytes, so its outcome does not wait for a batch (outcomeBatches).
	heavy bool
}

// SetDeadline bounds the request's time: at t its handler's context is
// cancelled with the cause [ErrHandlerTimeout] (its Err is then
// [context.DeadlineExceeded], and its Deadline reports t), and once the
// chain returns the request is answered [protocol.CodeRequestTimeout]
// (-32001, "request timed out") whatever the chain returned. It does not
// answer before the chain returns: handlers must watch their context. A
// request cancelled for another reason first keeps that cause and is not
// answered. [WithTimeout] and middleware call it
// instead of deriving a context with [context.WithDeadlineCause]: the
// deadline is the request context's own, with no timer or goroutine of
// its own. A later call can only move it earlier. It has no effect on a
// notification, nor once the chain has returned. It is safe for
// concurrent use.
func (req *Request) SetDeadline(t time.Time) {
	if req.inf != nil {
		req.inf.setDeadline(t)
	}
}

// ArrivalContext returns the context req's message arrived with. A
// transport that delivers each message on a goroutine of its own
// (transport.Inline, such as Streamable HTTP, where each message is a POST)
// gives it the context of that delivery: the HTTP request's, with whatever
// the HTTP server's own middleware put there, such as its span. For other
// messages it is the context the session was served with. The handler's
// context derives from the session's, not from this one: use it to read
// values, not for cancellation.
func (req *Request) ArrivalContext() context.Context {
	if req.arrival != nil {
		return req.arrival
	}
	if req.Session != nil {
		return req.Session.parent
	}
	return context.Background()
}

// InSession reports whether req belongs to the session it arrived on: a
// session the client opens with initialize (protocol versions up to
// 2025-11-25), whose [Session.ID] names it to the client. It is false for
// a 2026-07-28 stateless request, which carries its protocol version,
// client capabilities and client info in _meta instead of relying on an
// initialize handshake: its Session is only the connection it came on.
// Middleware uses it to tag logs and spans with the session id.
func (req *Request) InSession() bool { return req.era != nil && req.era.session() != nil }

// IsNotification reports whether req is a notification (it has no id).
func (req *Request) IsNotification() bool { return !req.ID.IsValid() }

// Outcome is how a request ended: exactly one of "answered" (Dropped is
// empty) or "dropped with a reason".
type Outcome struct {
	// Err is the error the chain returned (for a panic, a -32603 *Error);
	// nil on success. Note that a tool's failure is a successful result with
	// isError set. A notification's error is never answered, but it is
	// reported here. A request whose session ended under it, and which
	// the transport answered itself (a 2025 session deleted during the
	// call: -32000 "session terminated"), has that answer here, its Cause
	// set and Dropped empty.
	Err error
	// Result is the result the chain returned, such as a *CallToolResult;
	// nil when it returned an error.
	Result any
	// Cause is the request context's cancellation cause, if it was cancelled
	// before the chain returned: the final one (a stream close's provisional
	// cause settles before the outcome is sealed; see [StreamCloseGrace]).
	Cause error
	// Dropped is why no response was written; empty when one was.
	Dropped protocol.DropReason
	// ResultTooLarge reports that the result was over its bound
	// ([WithMaxResultBytes], [Tool.MaxResultBytes]) and was answered
	// instead with the tool error now in Result (tools/call) or the
	// JSON-RPC error now in Err (resources/read, prompts/get,
	// completion/complete).
	ResultTooLarge bool
	// WriteErr is the write error that made the drop, if any.
	WriteErr error
	// Ended is when the request ended: when its response was written or
	// dropped, or, for a notification, when its chain returned. Everything
	// that records the outcome sees the same instant, so that the log line, the
	// metrics and the audit record of a request agree on its duration
	// (Ended minus [Request.Received]). The server always sets it.
	Ended time.Time
}

// ToolError reports whether the result is a tool's failure: a
// CallToolResult (or a pointer to one) with IsError set.
func (o Outcome) ToolError() bool {
	switch r := o.Result.(type) {
	case *CallToolResult:
		return r != nil && r.IsError
	case CallToolResult:
		return r.IsError
	}
	return false
}

type requestKey struct{}

// RequestFromContext returns the request a handler's context belongs to, or
// nil. Helpers that need the session or the request id (client calls,
// progress, logging) use it.
func RequestFromContext(ctx context.Context) *Request {
	req, _ := ctx.Value(requestKey{}).(*Request)
	return req
}
