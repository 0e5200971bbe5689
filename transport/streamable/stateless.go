package streamable

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
	"github.com/vigil-mcp/vigil/internal/paramheader"
	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// stateless serves a 2026-07-28 POST: validate the headers against the
// body, then serve the request as a session of its own.
func (h *Endpoint) stateless(w http.ResponseWriter, r *http.Request, msg transport.Message, caller string) {
	if conn := h.statelessConn(w, r, msg, caller); conn != nil {
		h.calls.add(conn) // its caller's notifications/cancelled finds it (stateless_cancel.go)
		_ = h.srv.Serve(context.WithoutCancel(&conn.arrival), conn)
		h.calls.remove(conn)
		if conn.releaseHeld() && h.cfg.onReject != nil {
			h.cfg.onReject(protocol.RejectCancelUnproven) // answered before its stream closed
		}
		if !conn.read {
			h.refuseShuttingDown(conn)
		}
		endStateless(conn)
	}
}

// endStateless ends a stateless request's stream once the server is done
// with it. Read but not answered, the client still there and not having
// cancelled it, the server stopped under it (its shutdown's grace ran out,
// or it closed): the client gets the error EndAnswer names, with its id,
// never an empty 200. It is not inlined, and builds that answer only when
// it is needed, so that stateless's frame, which every request's stack
// holds, stays small (TestRequestFitsTheStartingStack) and an answered
// request allocates nothing for it.
//
//go:noinline
func endStateless(conn *oneShot) {
	var cut *transport.Response
	if conn.r.Context().Err() == nil && conn.st.undecided() { // a client that left is written nothing
		cut = &transport.Response{ID: conn.req.ID, Error: cutByShutdown()}
	}
	conn.st.shutDown(cut)
}

// cutByShutdown is the answer of a stateless request the server stopped
// serving before it answered: the -32000 "server is shutting down" of a
// request refused in the drain.
func cutByShutdown() *transport.Error {
	return &transport.Error{Code: int64(protocol.CodeServerBusy), Message: protocol.RejectShuttingDown.Message()}
}

// EndAnswer implements transport.EndAnswerer: a request whose session,
// its own, the server ended under it (its shutdown's grace ran out, or
// it closed) is answered by stateless with cutByShutdown, unless its
// client left or cancelled it, or its event stream had begun. (Its own
// deadline passing is no end of its session: the server answers it.)
func (c *oneShot) EndAnswer(transport.ID) *transport.Error {
	if c.r.Context().Err() != nil {
		return nil // the client left
	}
	return c.st.endAnswerOf(cutByShutdown(), nil)
}

// refuseShuttingDown answers a stateless request the server would not
// serve, never having read it: it is shutting down (or closed). As a 2025
// session's request refused in the drain, it gets the -32000 "server is
// shutting down" error with its id, and, as a request that belongs to no
// session and may go to another replica, 503 with Retry-After (as a 2025
// initialize refused then does), never an empty 200.
func (h *Endpoint) refuseShuttingDown(conn *oneShot) {
	refusal := &transport.Response{ID: conn.req.ID, Error: &transport.Error{
		Code: int64(protocol.CodeServerBusy), Message: protocol.RejectShuttingDown.Message(),
	}}
	if conn.st.refuse(http.StatusServiceUnavailable, "1", refusal) && h.cfg.onReject != nil {
		h.cfg.onReject(protocol.RejectShuttingDown)
	}
}

// statelessConn checks a 2026-07-28 POST and returns the connection that
// serves its request, in a frame apart from stateless's, which stands
// over the whole handler (docs/limits.md, "The request's stack"); nil
// when it answered the POST instead: a notification, accepted, or a
// request refused.
//
//go:noinline
func (h *Endpoint) statelessConn(w http.ResponseWriter, r *http.Request, msg transport.Message, caller string) *oneShot {
	req, isRequest := msg.(*transport.Request)
	if !isRequest || req.IsNotification() {
		if isRequest && req.Method == "notifications/cancelled" {
			h.cancelStateless(r, req) // stateless_cancel.go
		}
		w.WriteHeader(http.StatusAccepted) // nothing else waits for it in this era
		return nil
	}
	header := headerValue(r.Header, headerProtocolVersion)
	if header == "" {
		h.reject(w, http.StatusBadRequest, req.ID, protocol.CodeHeaderMismatch, protocol.RejectProtocolMismatch, "missing MCP-Protocol-Version header")
		return nil
	}
	// params split once, for these checks and the server (Members).
	members, _ := req.Members()
	field, value := routingMember(req.Method, members)
	var version, caps []byte // the last of each, as the server reads _meta
	req.EachMeta(func(key, val []byte) {
		switch string(key) {
		case vocab.MetaProtocolVersion:
			version = val
		case vocab.MetaClientCapabilities:
			caps = val
		}
	})
	if version == nil || caps == nil {
		h.reject(w, http.StatusBadRequest, req.ID, protocol.CodeInvalidParams, protocol.RejectInvalidParams,
			"params._meta must carry "+vocab.MetaProtocolVersion+" and "+vocab.MetaClientCapabilities)
		return nil
	}
	if !isString(version, header) {
		h.reject(w, http.StatusBadRequest, req.ID, protocol.CodeHeaderMismatch, protocol.RejectProtocolMismatch, "MCP-Protocol-Version header does not match params._meta")
		return nil
	}
	if err := checkRouting(r, req.Method, field, value); err != "" {
		h.reject(w, http.StatusBadRequest, req.ID, protocol.CodeHeaderMismatch, protocol.RejectProtocolMismatch, err)
		return nil
	}
	principal := h.principalOf(r)
	conn := &oneShot{req: req, r: r, caller: principal, byAddress: principal == "", admits: h.cfg.shedder != nil}
	if conn.byAddress {
		conn.caller = clientIP(r.RemoteAddr) // as ownerOf
	}
	conn.st.init(w, h.cfg.mode, statelessStatus, nil)
	conn.st.limit = &h.limit
	conn.st.quotas, conn.st.caller = h.quotas, caller
	// The server checks the Mcp-Param-* headers against the tool's schema:
	// both the session's context and the request's arrival carry them.
	conn.arrival = paramheader.Carrier{Context: r.Context(), Header: r.Header}
	return conn
}

// routingMember returns the member of method's params that the Mcp-Name
// header names and its raw value in m (nil when absent), or "" when the
// header names none.
func routingMember(method string, m transport.ParamMembers) (field string, value []byte) {
	switch method {
	case "tools/call", "prompts/get":
		return "name", m.Name
	case "resources/read":
		return "uri", m.URI
	case "tasks/get", "tasks/update", "tasks/cancel":
		return "taskId", m.TaskID
	}
	return "", nil
}

// checkRouting compares the Mcp-Method and Mcp-Name headers with the
// body's method and value, the raw params member field (see routingMember),
// nil when params has none.
func checkRouting(r *http.Request, method, field string, value []byte) string {
	got, ok := r.Header[headerMethod]
	if !ok || len(got) == 0 {
		return "missing Mcp-Method header"
	}
	if strings.TrimSpace(got[0]) != method {
		return "Mcp-Method header does not match the body's method"
	}
	if field == "" {
		return ""
	}
	name, ok := r.Header[headerName]
	if !ok || len(name) == 0 {
		return "missing Mcp-Name header"
	}
	if !readsAs(value, strings.TrimSpace(name[0])) {
		return "Mcp-Name header does not match the body's " + field
	}
	return ""
}

// isString reports whether raw is the JSON string s, decoding it only when
// it has escapes.
func isString(raw []byte, s string) bool {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1:len(raw)-1]) == s
	}
	v, ok := jsonscan.DecodeString(raw)
	return ok && v == s
}

// readsAs reports whether raw, a JSON value or nil, reads as s: a string
// as its decoded value, anything else (absent included) as "".
func readsAs(raw []byte, s string) bool {
	if len(raw) > 0 && raw[0] == '"' {
		return isString(raw, s)
	}
	return s == ""
}

// statelessStatus maps a JSON-RPC error to the HTTP status 2026-07-28 asks
// for.
func statelessStatus(code int64) int {
	switch protocol.Code(code) {
	case protocol.CodeMethodNotFound:
		return http.StatusNotFound
	case protocol.CodeParseError, protocol.CodeInvalidRequest, protocol.CodeInvalidParams,
		protocol.CodeHeaderMismatch, protocol.CodeMissingRequiredClientCapability, protocol.CodeUnsupportedProtocolVersion:
		return http.StatusBadRequest
	default:
		return http.StatusOK
	}
}

// errAnswered is what a oneShot Conn reads once its answer is written:
// the end of its input.
var errAnswered error = answeredError{}

// answeredError is errAnswered: transport.ErrPeerGone and io.EOF to
// errors.Is, as a wrapping of both would be, but with nothing to unwrap:
// the session's end asks it several questions for every stateless request.
type answeredError struct{}

func (answeredError) Error() string {
	return "streamable: read: " + transport.ErrPeerGone.Error() + ": " + io.EOF.Error()
}

// Is reports whether target is transport.ErrPeerGone or io.EOF.
func (answeredError) Is(target error) bool {
	return target == transport.ErrPeerGone || target == io.EOF
}

// oneShot is the Conn of a stateless request: it reads the request once,
// then waits for the answer to be written (a clean end) or for the client
// to leave (the stream closed: the request is cancelled). It is
// transport.Inline: the server's first Read hands the request to dispatch
// on the goroutine of the POST itself, which runs the handler there, with
// no goroutine of its own and no hand-off, as a 2025 session's requests are.
// It is transport.Single: the server makes no session of it.
type oneShot struct {
	req      *transport.Request
	r        *http.Request
	arrival  paramheader.Carrier  // r's context, with r's headers
	st       stream               // the response, held here: one allocation less
	dispatch transport.Dispatcher // set under mu: cancel reads it from another POST's goroutine
	read     bool
	admits   bool   // the Endpoint asked the server's Shedder about req (AdmitsRequests)
	caller   string // whom the request is filed under (stateless_cancel.go)
	// byAddress: caller is the client's address, not a principal; a
	// cancel is held until the stream closes (cancelWhenGone).
	byAddress bool
	hash      uint64   // its key's hash in the registry
	prev      *oneShot // its neighbors in the registry's chain; guarded by the chain's lock
	next      *oneShot

	mu     sync.Mutex
	closed latch // Close was called; its channel is made when Read waits, which an answered request never does
	// stopHeld ends the wait of a cancel held for the stream's close
	// (cancelWhenGone); nil when none is held. Guarded by mu.
	stopHeld func() bool
}

// SetDispatch makes the first Read run the request through dispatch.
func (c *oneShot) SetDispatch(d transport.Dispatcher) {
	c.mu.Lock()
	c.dispatch = d
	c.mu.Unlock()
}

// cancel hands the server n, the client's notifications/cancelled for the
// request, on the caller's goroutine (that of the POST that brought n):
// the server cancels the request with the client's cause. A response not
// yet begun then ends as an empty event stream, as a cancelled 2025
// request's does: the client wants no answer.
func (c *oneShot) cancel(n *transport.Request) {
	c.st.markCancelled()
	c.mu.Lock()
	d := c.dispatch
	c.mu.Unlock()
	if d != nil {
		d.Dispatch(context.Background(), n)
	}
}

// cancelWhenGone holds n, a notifications/cancelled for a request filed
// by its client's address, which any client at that address could have
// sent: the request is cancelled with n once its stream closes (which
// its own client alone can do), at once if it is closed already, so that
// its cause is the client's. A client that closes the stream cancels the
// request anyway (2026-07-28); another one's notification changes
// nothing. It reports false when a notification is held already: the
// first is kept.
func (c *oneShot) cancelWhenGone(n *transport.Request) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopHeld != nil {
		return false
	}
	c.stopHeld = context.AfterFunc(c.r.Context(), func() { c.cancel(n) })
	return true
}

// releaseHeld ends the wait of the notification cancelWhenGone held, if
// any, once the request ended; it reports whether one was held and never
// acted on (the request was answered while its stream stayed open).
func (c *oneShot) releaseHeld() bool {
	c.mu.Lock()
	stop := c.stopHeld
	c.mu.Unlock()
	return stop != nil && stop()
}

// Read returns the request, or with a dispatcher runs it through that
// first; then it waits until the request is answered, the client leaves
// or the session closes. Its frame stands over the whole handler
// (docs/limits.md, "The request's stack"): the wait is in wait's.
func (c *oneShot) Read(ctx context.Context) (transport.Message, error) {
	if !c.read {
		c.read = true
		if c.dispatch == nil {
			return c.req, nil
		}
		// Answered or dropped when dispatch returns; the stream is the
		// POST's, so the client leaving cancels the request.
		c.dispatch.Dispatch(&c.arrival, c.req)
		if c.st.answered() {
			return nil, errAnswered // without making written's channel
		}
	}
	return c.wait(ctx)
}

// wait waits until the request is answered, the client leaves, the
// Conn closes or ctx is done, and returns the error Read returns then.
func (c *oneShot) wait(ctx context.Context) (transport.Message, error) {
	select {
	case <-c.st.written():
		return nil, errAnswered
	case <-c.r.Context().Done():
		return nil, fmt.Errorf("streamable: read: the client closed the stream: %w: %w", transport.ErrPeerGone, context.Cause(c.r.Context()))
	case <-c.closedChan():
		return nil, fmt.Errorf("streamable: read: %w", transport.ErrClosed)
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func (c *oneShot) Write(_ context.Context, m transport.Message) error { return c.st.deliver(m) }

// SingleRequest marks the Conn as transport.Single: its session is the
// request's alone.
func (*oneShot) SingleRequest() {}

// AdmitsRequests reports whether the Endpoint asked the server's Shedder
// about the request (see transport.Admitter).
func (c *oneShot) AdmitsRequests() bool { return c.admits }

func (c *oneShot) Close() error {
	c.mu.Lock()
	c.closed.fire()
	c.mu.Unlock()
	return nil
}

// closedChan returns a channel closed once Close is called.
func (c *oneShot) closedChan() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed.wait()
}
