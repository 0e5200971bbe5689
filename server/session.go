package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/internal/overload"
	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Session is one client connection being served: the state of its
// handshake, its in-flight requests in both directions, and its writer.
// Handlers reach it through [Request].Session. Its methods are safe for
// concurrent use.
type Session struct {
	srv       *Server
	conn      transport.Conn
	id        string                 // the transport's (see sessionIDOf); "" until ID makes a random one
	randomID  atomic.Pointer[string] // made by the first ID of a session whose transport names none
	started   time.Time
	parent    context.Context
	ctx       context.Context // cancelled, with a cause, when the session ends; see cancel
	cancelCtx context.CancelCauseFunc
	unwatch   func() bool // stops closing conn when ctx is done; nil: cancel closes it
	// reqParent is what the contexts of the session's requests derive
	// from: ctx without its cancellation, so that a request's context is
	// not registered with ctx (a lock and a map entry that every request
	// of the session, on every core, would write); cancel cancels them
	// (sweepRequests), and whoever finds the session's context done
	// before that cancels one (endedUnswept). nil: they derive from ctx,
	// whose deadline they must keep, or the session has no request but
	// its one (single).
	reqParent context.Context
	obs       *observers                  // the server's (observer.go)
	log       atomic.Pointer[slog.Logger] // with the session's id; made on first use (logger)

	handlers sync.WaitGroup
	inline   bool                // the Conn delivers messages on goroutines of its own
	single   bool                // the Conn carries one request (transport.Single): no session but the request's
	selfShed bool                // the transport asks the Shedder itself (transport.Admitter): the session does not
	shared   transport.Shared    // the conn, when its session is shared by replicas (shared.go); else nil
	group    transport.Multicast // the conn's multicast group (notify.go); nil: none
	logging  sessionLogging      // logging/setLevel and the log rate limit (logging.go)
	progress progressTable       // progress tokens in flight (progress.go)

	mu sync.Mutex // guards st; never held during I/O
	st sessionState

	shard    uint8               // the list of srv.sessions it is in (pickSessionShard)
	backlog  atomic.Int32        // notifications to every session waiting for its writer (notify.go)
	link     sessionLink         // in that list; its mu guards it
	closeErr transportCloseError // the cause stop ends the session with
}

type phase uint8

const (
	phaseNew         phase = iota // waiting for initialize
	phaseInitialized              // initialize answered
	phaseReady                    // notifications/initialized received
)

type sessionState struct {
	phase    phase
	version  string
	client   Implementation
	caps     ClientCapabilities
	incoming incomingSet
	// sealing counts the requests out of incoming (their ids free for
	// the client again) whose outcome is not sealed yet: their responses
	// are being written, and a drain must wait for them too.
	sealing  int
	outgoing map[transport.ID]*outgoing // nil when empty
	nextID   int64
	draining bool                // Shutdown began: admit no new requests
	closed   bool                // the session ended: write nothing more
	broken   protocol.DropReason // class of the first failed write; DropNone while writes succeed
}

// inflight is one incoming request between admission and its outcome.
type inflight struct {
	req    *Request
	ctx    context.Context
	cancel context.CancelCauseFunc
	batch  *batchCollector // nil unless the request came in a batch
	ss     *Session

	// An inline request's stream (see inlineOrigin), whose end cancels
	// ctx. It is watched (context.AfterFunc, unlink undoes it) only once
	// someone waits on ctx's Done; until then Err and the outcome check
	// the stream themselves. Most handlers never wait, and a watch on an
	// HTTP request's context costs that context a table of children.
	stream  context.Context
	unlink  func() bool // guarded by mu
	watched atomic.Bool // watching, or finished: no watch to set up

	// Held here rather than allocated one by one: the request (req points
	// to it when admit made it), the context its handler runs with, and
	// its answer.
	request   Request
	rctx      requestCtx
	resp      transport.Response
	stateless statelessEra // the request's era, if stateless

	// The request's own deadline (Request.SetDeadline), guarded by mu: zero
	// for none; the server's deadlineQueue cancels ctx with
	// ErrHandlerTimeout at it, and timedOut says it did.
	mu       sync.Mutex
	deadline time.Time
	sealed   bool // the chain returned: no deadline any more
	timedOut atomic.Bool

	// closing: a stream close's cause was offered to ctx (streamClosed);
	// until then no cause of ctx is one, and settleCause has nothing to do.
	closing atomic.Bool

	// The deadline queue it is in once it has a deadline (guarded by mu),
	// and its place there, guarded by the queue's lock (see deadlineQueue).
	deadlines  *deadlineQueue
	expiresAt  time.Time
	prev, next *inflight // neighbors in the queue
	queued     bool      // in the queue
}

// setDeadline arms (or moves earlier) the request's deadline: at t, its
// context is cancelled with ErrHandlerTimeout.
func (inf *inflight) setDeadline(t time.Time) {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if inf.sealed || (!inf.deadline.IsZero() && !t.Before(inf.deadline)) {
		return
	}
	inf.deadline = t
	if inf.deadlines == nil {
		inf.deadlines = inf.ss.srv.deadlines.pick()
	}
	inf.deadlines.add(inf, t)
}

// expire is called by the deadline queue: the request ran out of time,
// unless its chain returned first.
func (inf *inflight) expire() {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if inf.sealed {
		return
	}
	inf.timedOut.Store(true)
	inf.cancel(ErrHandlerTimeout)
}

// watchStream makes the end of the request's stream cancel its context
// from now on, for a caller about to wait on the context's Done.
func (inf *inflight) watchStream() {
	if inf.stream == nil || inf.watched.Load() {
		return
	}
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if !inf.watched.Load() {
		inf.unlink = context.AfterFunc(inf.stream, inf.streamEnded)
		inf.watched.Store(true)
	}
}

// checkStream cancels the request's context if its stream ended and
// nothing watches it: what the watch would have done by now.
func (inf *inflight) checkStream() {
	if inf.stream != nil && !inf.watched.Load() && inf.stream.Err() != nil {
		inf.streamEnded()
	}
}

// streamEnded cancels the request's context because its stream ended.
func (inf *inflight) streamEnded() {
	ss := inf.ss
	switch {
	case ss.ctx.Err() != nil:
		// The session is ending: its cancellation is still walking its
		// children (in no set order) while the stream already closed
		// because of it. The session's cause is the true one.
		inf.cancel(context.Cause(ss.ctx))
	default:
		// Provisional until its outcome is sealed (StreamCloseGrace): the
		// client may yet say it cancelled, or show it is gone. A stateless
		// request's stream is its whole connection; its close is the
		// 2026-07-28 cancel signal, and a killed client's alike.
		inf.streamClosed(errStreamClosed)
	}
}

// stopWatches ends what watches the request once its chain returned: its
// place in the deadline queue, if any, and the watch on its stream (an
// ended stream cancels the context first). It reports whether the request
// ran out of time first (its context then ended with
// ErrHandlerTimeout, unless something else had cancelled it before).
func (inf *inflight) stopWatches() bool {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	inf.sealed = true
	if inf.unlink != nil {
		inf.unlink()
	} else {
		inf.checkStream() // unwatched: what the watch would have done
	}
	inf.watched.Store(true)
	if inf.deadline.IsZero() {
		return false
	}
	inf.deadlines.remove(inf)
	return inf.timedOut.Load() && errors.Is(context.Cause(inf.ctx), ErrHandlerTimeout)
}

// requestCtx is the context a request's handler runs with: ctx, carrying
// the request (see RequestFrom), as context.WithValue would make it, and
// reporting the request's own deadline (see Request.SetDeadline) as
// context.WithDeadline would, without a context of its own.
type requestCtx struct {
	context.Context
	req *Request
}

// Value returns the request for requestKey, its end functions and its
// server's hook for serverhook's keys, and asks the parent otherwise.
func (c *requestCtx) Value(key any) any {
	return requestValue(c.Context, c.req, key)
}

// requestValue is the Value of a context that carries req over parent.
func requestValue(parent context.Context, req *Request, key any) any {
	switch key.(type) {
	case requestKey:
		return req
	case serverhook.EndsKey:
		return &req.ends
	case serverhook.ServerKey:
		if req.Session != nil {
			return &req.Session.srv.hook
		}
		return nil
	}
	return parent.Value(key)
}

// notificationCtx is the context a notification's handler runs with: ctx
// carrying the notification, as requestCtx carries a request, without the
// request's own deadline.
type notificationCtx struct {
	context.Context
	req *Request
}

// Value returns as [requestCtx.Value] does.
func (c *notificationCtx) Value(key any) any { return requestValue(c.Context, c.req, key) }

// Deadline returns the earlier of the request's own deadline and ctx's.
func (c *requestCtx) Deadline() (time.Time, bool) {
	d, ok := c.Context.Deadline()
	inf := c.req.inf
	inf.mu.Lock()
	own := inf.deadline
	inf.mu.Unlock()
	if own.IsZero() || (ok && d.Before(own)) {
		return d, ok
	}
	return own, true
}

// Done watches the request's stream (see inflight.stream) from now on.
func (c *requestCtx) Done() <-chan struct{} {
	c.req.inf.watchStream()
	return c.Context.Done()
}

// Err is context.DeadlineExceeded once the request's own deadline passed,
// as context.WithDeadline's; context.Cause is then ErrHandlerTimeout. A
// request whose stream ended is cancelled first, watched or not.
func (c *requestCtx) Err() error {
	inf := c.req.inf
	inf.checkStream()
	if inf.endedUnswept() {
		inf.cancel(context.Cause(inf.ss.ctx))
	}
	err := c.Context.Err()
	if err != nil && c.req.inf.timedOut.Load() && errors.Is(context.Cause(c.Context), ErrHandlerTimeout) {
		return context.DeadlineExceeded
	}
	return err
}

// errStreamClosed is why a request whose stream closed is cancelled.
var errStreamClosed = fmt.Errorf("the client closed the request's stream: %w", transport.ErrStreamGone)

// transportCloseError is fmt.Errorf("%w: %w", ErrTransportClose, err) in
// one allocation instead of four, and formatted only when asked: a
// stateless request's session ends with one.
type transportCloseError struct{ errs [2]error } // ErrTransportClose and the cause

func (e *transportCloseError) Error() string {
	return e.errs[0].Error() + ": " + e.errs[1].Error()
}

func (e *transportCloseError) Unwrap() []error { return e.errs[:] }

// errInputEnded is why a session ends whose Conn reported its end with no
// error (a transport.Driven's end(nil)): its input ended, as at io.EOF.
var errInputEnded = fmt.Errorf("the connection ended: %w", io.EOF)

// errRequestDone releases a finished request's context. It is never a
// cancellation cause that anyone observes as one: the outcome is sealed first.
var errRequestDone = errors.New("mcp: request finished")

// newSession returns a session on conn. Whatever ends it closes conn,
// which is what unblocks a read loop stuck in Read (or, for a
// transport.Driven conn, what tells the server the session ended): a
// watch on the session's context does, except for an inline conn (whose
// Close does not block, see transport.Inline) whose session can only end
// through cancel (ctx is never done), which cancel closes itself, sparing
// the session the watch: a 2025 Streamable HTTP session's, and a stateless
// request's, which would otherwise pay for it on every request.
func newSession(ctx context.Context, s *Server, conn transport.Conn) *Session {
	sctx, cancel := context.WithCancelCause(ctx)
	ss := &Session{
		srv:       s,
		conn:      conn,
		id:        sessionIDOf(conn),
		started:   time.Now(),
		parent:    ctx,
		ctx:       sctx,
		cancelCtx: cancel,
		obs:       &s.obs,
		single:    isSingle(conn),
		selfShed:  s.cfg.shedder != nil && admitsRequests(conn),
		shard:     pickSessionShard(),
	}
	if !ss.single {
		if m, ok := conn.(transport.MulticastMember); ok {
			ss.group = m.Multicast()
		}
	}
	if _, inline := conn.(transport.Inline); !inline || ctx.Done() != nil {
		ss.unwatch = context.AfterFunc(sctx, func() { _ = conn.Close() })
	}
	if p, ok := transport.As[transport.ClientPresence](conn); ok {
		p.OnStandaloneClosed(ss.settleStandaloneClosed) // stream_close.go
	}
	if _, deadline := ctx.Deadline(); !ss.single && !deadline {
		ss.reqParent = context.WithoutCancel(sctx)
	}
	return ss
}

// sweepRequests cancels the requests in flight with the session's cause;
// cancel calls it, since their contexts derive from reqParent, which the
// session's cancellation does not reach. Every end of a session passes
// through cancel: ctx ending closes conn (the watch above), which ends
// the session. An initialize is never cancelled.
func (ss *Session) sweepRequests() {
	cause := context.Cause(ss.ctx)
	ss.mu.Lock()
	cancels := make([]context.CancelCauseFunc, 0, ss.st.incoming.len())
	for _, inf := range ss.st.incoming.all() {
		if inf.req.Method != "initialize" {
			cancels = append(cancels, inf.cancel)
		}
	}
	ss.mu.Unlock()
	for _, cancel := range cancels {
		cancel(cause)
	}
}

// endedUnswept reports whether inf's session has ended while inf's context
// is not cancelled yet: sweepRequests has not reached it. Whoever sees it
// cancels inf with the session's cause, as the sweep would.
func (inf *inflight) endedUnswept() bool {
	ss := inf.ss
	return ss.reqParent != nil && inf.req.Method != "initialize" && ss.ctx.Err() != nil && inf.ctx.Err() == nil
}

// cancel ends the session's context with cause, unless it already ended,
// and with it the requests in flight, and so closes conn.
func (ss *Session) cancel(cause error) {
	ss.cancelCtx(cause)
	if ss.reqParent != nil {
		ss.sweepRequests() // at once, as the context's own children are
	}
	if !ss.single { // a stateless request's session is only the request's
		ss.settleOnEnd()
	}
	if ss.unwatch == nil {
		_ = ss.conn.Close() // a transport.Driven conn's Close does not block
	}
}

// debug logs a debug record with the session's logger, which it makes
// only when the server's logger would write the record.
func (ss *Session) debug(msg string, args ...any) {
	if ss.srv.cfg.logger.Enabled(ss.ctx, slog.LevelDebug) {
		ss.logger().Debug(msg, args...)
	}
}

// logger returns the server's logger with the session's id.
func (ss *Session) logger() *slog.Logger {
	if l := ss.log.Load(); l != nil {
		return l
	}
	ss.log.CompareAndSwap(nil, ss.srv.cfg.logger.With("session", ss.ID()))
	return ss.log.Load()
}

// sessionIDOf returns the id the transport gave the session (see
// transport.SessionIDer), or "": ID makes one when first asked (a
// stateless request's session, as a rule, is never asked).
func sessionIDOf(conn transport.Conn) string {
	if c, ok := conn.(transport.SessionIDer); ok {
		return c.SessionID()
	}
	return ""
}

func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// ID returns the session's id: the one its transport gave it (Streamable
// HTTP's Mcp-Session-Id, see transport.SessionIDer), else 32 random hex
// digits, unique per session.
func (ss *Session) ID() string {
	if ss.id != "" {
		return ss.id
	}
	if p := ss.randomID.Load(); p != nil {
		return *p
	}
	id := newSessionID()
	if ss.randomID.CompareAndSwap(nil, &id) {
		return id
	}
	return *ss.randomID.Load()
}

// Server returns the server that serves the session.
func (ss *Session) Server() *Server { return ss.srv }

// Started returns when the session began.
func (ss *Session) Started() time.Time { return ss.started }

// Done returns a channel closed when the session ends.
func (ss *Session) Done() <-chan struct{} { return ss.ctx.Done() }

// ProtocolVersion returns the negotiated protocol version, or "" before
// initialize.
func (ss *Session) ProtocolVersion() string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.st.version
}

// ClientInfo returns the clientInfo the client sent in initialize.
func (ss *Session) ClientInfo() Implementation {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.st.client
}

// ClientCapabilities returns the capabilities the client declared.
func (ss *Session) ClientCapabilities() ClientCapabilities {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.st.caps
}

// serve is the read loop. It runs on Serve's goroutine. Its frame stands
// over the whole handler of a Conn that runs it inline from Read
// (docs/limits.md, "The request's stack"): a read's error is looked at in
// rejectUndecodable's.
func (ss *Session) serve() error {
	ss.start()
	for {
		msg, err := ss.conn.Read(ss.ctx)
		switch {
		case err == nil:
			ss.dispatch(msg)
		case !ss.rejectUndecodable(err):
			return ss.stop(err)
		}
	}
}

// rejectUndecodable answers the message err says could not be decoded and
// reports true (the read loop goes on); false for an error that ends the
// input.
func (ss *Session) rejectUndecodable(err error) bool {
	de, ok := errors.AsType[*transport.DecodeError](err)
	if ok {
		ss.reject(nil, de.ID, de.Code, de.Reason(), de.Err.Error())
	}
	return ok
}

// start reports the session started and, when the Conn delivers messages
// on goroutines of its own (transport.Inline), has it call dispatchInline.
func (ss *Session) start() {
	ss.shareState()
	if !ss.single {
		ss.obs.SessionStarted(ss.ctx, ss)
	}
	if in, ok := ss.conn.(transport.Inline); ok {
		ss.inline = true
		in.SetDispatch((*inlineDispatcher)(ss))
	}
}

// stop ends the session because its input ended with readErr, and returns
// what Serve returns.
func (ss *Session) stop(readErr error) error {
	if errors.Is(readErr, transport.ErrFrameTooLarge) {
		ss.reject(nil, transport.ID{}, protocol.CodeInvalidRequest, protocol.RejectFrameTooLarge, protocol.RejectFrameTooLarge.Message())
	}
	if readErr == nil {
		readErr = errInputEnded // an end with no error is the input's end
	}
	ss.closeErr = transportCloseError{[2]error{ErrTransportClose, readErr}}
	ss.end(&ss.closeErr) // held in ss: one allocation fewer for each stateless request
	cause := context.Cause(ss.ctx)
	// inner is what to ask for ErrShutdown and io.EOF: when the read's end
	// ended the session (its cause is closeErr), readErr, since
	// ErrTransportClose is neither; a stateless request's session ends
	// so, and errors.Is on the two-error chain costs it three walks.
	inner := cause
	if cause == error(&ss.closeErr) { //nolint:errorlint // identity: the cause is this session's own closeErr, not one wrapping it
		inner = readErr
	}
	switch {
	case errors.Is(inner, ErrShutdown):
		return ErrServerClosed
	case ss.parent.Err() != nil && errors.Is(cause, context.Cause(ss.parent)):
		return cause
	case errors.Is(inner, io.EOF):
		return nil
	default:
		return cause
	}
}

// end tears the session down: cancel everything with cause (unless an
// earlier cause won), fail the outgoing requests still waiting, close the
// transport and wait for the handlers.
func (ss *Session) end(cause error) {
	if ss.unwatch != nil {
		// end closes the conn itself, below: stopping the watch first
		// spares a goroutine per session (a stateless request's, each
		// request) that the watch would start to close it again.
		ss.unwatch()
	}
	ss.cancel(cause)
	ss.mu.Lock()
	ss.st.closed = true
	waiting := make([]*outgoing, 0, len(ss.st.outgoing))
	for _, o := range ss.st.outgoing { // a snapshot: nothing below touches the map
		waiting = append(waiting, o)
	}
	ss.st.outgoing = nil
	ss.mu.Unlock()
	var closedErr error
	if len(waiting) > 0 {
		closedErr = ss.closedError()
	}
	for _, o := range waiting {
		o.ch <- nil // buffered, and this is its only sender after removal
		ss.obs.OutgoingFailed(ss.ctx, ss, o.method, closedErr)
	}
	_ = ss.conn.Close()
	ss.handlers.Wait()
	if ss.single {
		return // it subscribed to nothing (a stateless request may not), and was no session
	}
	ss.srv.unsubscribeAll(ss)
	cause = context.Cause(ss.ctx)
	ss.debug("session ended", "cause", cause)
	ss.obs.SessionEnded(ss.ctx, ss, cause)
}

func (ss *Session) closedError() error {
	return fmt.Errorf("%w: %w", ErrConnectionClosed, context.Cause(ss.ctx))
}

// drain makes the session refuse new requests and end once none is in
// flight (Server.Shutdown).
func (ss *Session) drain() {
	ss.mu.Lock()
	ss.st.draining = true
	idle := ss.st.incoming.len() == 0 && ss.st.sealing == 0 // else the last to finish ends it
	ss.mu.Unlock()
	if idle {
		ss.cancel(ErrShutdown)
	}
}

// inlineDispatcher is a Session as the transport.Dispatcher of its Inline
// Conn: a conversion, not a closure, so that handing it over allocates
// nothing.
type inlineDispatcher Session

// Dispatch runs msg through dispatchInline.
func (d *inlineDispatcher) Dispatch(stream context.Context, msg transport.Message) {
	(*Session)(d).dispatchInline(stream, msg)
}

// dispatchInline handles a message on the goroutine that brought it (see
// transport.Inline); a request runs to its outcome before it returns, and
// is cancelled if stream ends first.
func (ss *Session) dispatchInline(stream context.Context, msg transport.Message) {
	if m, ok := msg.(*transport.Request); ok {
		switch {
		case m.IsNotification() && ss.single:
			ss.cancelSingle(m)
		case m.IsNotification():
			ss.notification(stream, m)
		default:
			ss.admit(m, nil, &inlineOrigin{stream: stream})
		}
		return
	}
	ss.dispatch(msg)
}

func (ss *Session) dispatch(msg transport.Message) {
	switch m := msg.(type) {
	case *transport.Request:
		if m.IsNotification() {
			ss.notification(ss.parent, m)
		} else {
			ss.admit(m, nil, nil)
		}
	case *transport.Response:
		ss.answer(m)
	case transport.Batch:
		ss.batch(m)
	case *transport.Abandoned:
		ss.abandon(m)
	}
}

// abandon cancels a request whose answer can no longer be delivered (its
// stream closed) with a stream close's provisional cause (see
// StreamCloseGrace).
func (ss *Session) abandon(m *transport.Abandoned) {
	ss.mu.Lock()
	inf := ss.st.incoming.get(m.ID)
	ss.mu.Unlock()
	if inf != nil {
		inf.streamClosed(m.Err) // provisional, as streamEnded's
	}
}

func (ss *Session) newRequest(m *transport.Request) *Request {
	req := new(Request)
	ss.initRequest(req, m, nil)
	return req
}

// initRequest fills req, a zero Request, for m; a stateless request's era
// is held in stateless when it is not nil.
func (ss *Session) initRequest(req *Request, m *transport.Request, stateless *statelessEra) {
	// Field by field: req is zero, and a Request literal would be built
	// whole and copied.
	req.ID, req.Method, req.Params, req.Session, req.Received = m.ID, m.Method, m.Params, ss, time.Now()
	if p, ok := readRequestParams(m, &req.Meta); ok {
		var unwrapErr *Error
		if m.Method == "tools/call" && p.Name == callToolName && ss.srv.searching() {
			unwrapErr = unwrapCall(req, &p) // tool_search.go: the call of the tool it names
		}
		req.parsed, req.args, req.task, req.round = true, p.Arguments, p.Task, p.Round
		switch m.Method {
		case "tools/call", "prompts/get":
			req.Name = p.Name
		case "resources/read", "resources/subscribe", "resources/unsubscribe":
			req.URI = p.URI
		}
		if err := cmp.Or(unwrapErr, overBound(m.Method, p)); err != nil {
			// Refused at admission: no table, span or log sees the name.
			req.Name, req.URI, req.admitErr = "", "", err
		}
	}
	ss.mu.Lock()
	req.Protocol, req.ClientCapabilities, req.ClientInfo = ss.st.version, ss.st.caps, ss.st.client
	fresh := ss.st.phase == phaseNew
	ss.mu.Unlock()
	req.era = ss.eraOf(req, fresh, stateless)
}

// inlineOrigin describes a request that came inline (see transport.Inline):
// its handler runs on the caller's goroutine, and stream ending before the
// answer cancels it.
type inlineOrigin struct {
	stream context.Context
}

// admit admits one request and runs its handler: on a goroutine of its own
// when it came through the read loop (inline is nil), on the caller's when
// it came inline. initialize always runs on the caller's, so that the
// requests after it see the negotiated state.
//
// Its frame stands over the whole handler (docs/limits.md, "The
// request's stack"): the admission is worked out in admitted's.
func (ss *Session) admit(m *transport.Request, batch *batchCollector, inline *inlineOrigin) {
	inf := ss.admitted(m, batch, inline)
	switch {
	case inf == nil: // refused or dropped, and counted
	case inf.req.Method == "initialize" || inline != nil:
		ss.run(inf)
		ss.handlers.Done()
	default:
		go func() {
			defer ss.handlers.Done()
			ss.run(inf)
		}()
	}
}

// admitted admits m and returns it in flight, counted in ss.handlers, for
// admit to run; nil when it is refused (and answered) or dropped.
//
//go:noinline
func (ss *Session) admitted(m *transport.Request, batch *batchCollector, inline *inlineOrigin) *inflight {
	if seconds := ss.shed(m); seconds > 0 {
		e := &Error{Code: protocol.CodeServerBusy, Message: protocol.RejectOverloaded.Message(), Data: []byte(overload.RetryData(seconds))}
		ss.rejectWith(batch, m.ID, e, protocol.RejectOverloaded)
		return nil
	}
	held := new(inflight) // the request's, if admitted
	req := &held.request
	ss.initRequest(req, m, &held.stateless)
	if inline != nil {
		req.arrival = inline.stream
	}
	if req.admitErr != nil {
		ss.rejectWith(batch, req.ID, req.admitErr, admissionReason(req.admitErr.Code))
		return nil
	}
	ss.mu.Lock()
	code, reason, why := ss.admitLocked(req)
	var inf *inflight
	if code == 0 {
		inf = held
		inf.req, inf.batch, inf.ss = req, batch, ss
		switch {
		case ss.single:
			// The session is the request's own: its context is the
			// request's, one context fewer; end cancels it.
			inf.ctx, inf.cancel = ss.ctx, ss.cancelCtx
		case req.Method == "initialize":
			inf.ctx, inf.cancel = context.WithCancelCause(context.WithoutCancel(ss.ctx)) // never cancelled
		case ss.reqParent != nil:
			// The sweep cancels it if the session ends from now on;
			// if it ended already, the sweep may have passed, and
			// inf is cancelled below (endedUnswept).
			inf.ctx, inf.cancel = context.WithCancelCause(ss.reqParent)
		default:
			inf.ctx, inf.cancel = context.WithCancelCause(ss.ctx)
		}
		ss.st.incoming.add(req.ID, inf)
		ss.handlers.Add(1) // under the lock, before end() can start waiting
	}
	broken := ss.st.broken
	ss.mu.Unlock()
	if code == 0 && inf.endedUnswept() {
		inf.cancel(context.Cause(ss.ctx))
	}
	if code == 0 && inline != nil {
		inf.stream = inline.stream
	}
	switch {
	case code == 0:
		return inf
	case broken != protocol.DropNone:
		// Nothing can be written: the request is read and dropped.
		ss.obs.ResponseDropped(ss.ctx, req, broken)
		batch.skip()
	default:
		ss.reject(batch, req.ID, code, reason, why)
	}
	return nil
}

// shed returns the Retry-After, in seconds, of m's refusal when the
// server's Shedder sheds it, else 0 (never one that overload.Exempt
// spares, nor one its transport admitted). Its caller is not known here:
// the share is refused uniformly.
func (ss *Session) shed(m *transport.Request) int {
	sh := ss.srv.cfg.shedder
	if sh == nil || ss.selfShed || overload.Exempt(m.Method) {
		return 0
	}
	return overload.Refusal(ss.ctx, sh, "")
}

// admitLocked decides whether req may run: code 0, or the code, reason and
// message to refuse it with.
func (ss *Session) admitLocked(req *Request) (protocol.Code, protocol.RejectReason, string) {
	st := &ss.st
	switch {
	case st.broken != protocol.DropNone:
		return protocol.CodeInternal, protocol.RejectOther, "writer broken"
	case st.closed:
		return protocol.CodeServerBusy, protocol.RejectOther, "session closed"
	case st.draining:
		return protocol.CodeServerBusy, protocol.RejectShuttingDown, protocol.RejectShuttingDown.Message()
	case st.incoming.get(req.ID) != nil:
		return protocol.CodeInvalidRequest, protocol.RejectDuplicateID, protocol.RejectDuplicateID.Message()
	case req.Method == "initialize" && st.phase != phaseNew:
		return protocol.CodeInvalidRequest, protocol.RejectLifecycle, "session already initialized"
	case req.Method != "initialize" && req.Method != "ping" && req.Method != "server/discover" && req.era.session() != nil && st.phase == phaseNew:
		return protocol.CodeInvalidRequest, protocol.RejectLifecycle, "session not initialized: the first request must be initialize"
	case ss.srv.cfg.maxInFlight > 0 && st.incoming.len() >= ss.srv.cfg.maxInFlight:
		return protocol.CodeServerBusy, protocol.RejectInFlightLimit, protocol.RejectInFlightLimit.Message()
	}
	return 0, protocol.RejectOther, ""
}

// admissionReason classifies the error a stateless request's _meta was
// refused with at admission (see eraOf).
func admissionReason(code protocol.Code) protocol.RejectReason {
	switch code {
	case protocol.CodeInvalidParams:
		return protocol.RejectInvalidParams
	case protocol.CodeHeaderMismatch, protocol.CodeMissingRequiredClientCapability, protocol.CodeUnsupportedProtocolVersion:
		return protocol.RejectProtocolMismatch
	}
	return protocol.RejectOther
}

// reject answers a message that never reached a handler.
func (ss *Session) reject(batch *batchCollector, id transport.ID, code protocol.Code, reason protocol.RejectReason, why string) {
	ss.rejectWith(batch, id, &Error{Code: code, Message: why}, reason)
}

// rejectWith answers a message that never reached a handler with e.
func (ss *Session) rejectWith(batch *batchCollector, id transport.ID, e *Error, reason protocol.RejectReason) {
	ss.obs.MessageRejected(ss.ctx, ss, e.Code, reason)
	ss.debug("message rejected", "code", int64(e.Code), "reason", reason.String(), "message", e.Message)
	resp := &transport.Response{ID: id, Error: &transport.Error{Code: int64(e.Code), Message: e.Message, Data: e.Data}}
	if batch != nil {
		batch.add(resp, nil)
		return
	}
	_ = ss.write(ss.ctx, resp)
}

func (ss *Session) run(inf *inflight) {
	inf.req.inf = inf
	inf.rctx = requestCtx{Context: inf.ctx, req: inf.req}
	ss.srv.cfg.timeout.armTimeout(inf.req)
	res, err := ss.srv.invoke(&inf.rctx, inf.req)
	ss.finish(inf, res, err)
}

// finish seals a request's outcome: answered, or dropped with a reason.
// Removing the request from the in-flight table under the lock is the commit
// point: a cancellation that finds it gone is ignored, and one that came
// before is seen here, so one id never gets two answers.
func (ss *Session) finish(inf *inflight, res any, err error) {
	// Its own deadline passing is no cancellation: the request is
	// answered -32001, whatever the chain returned, since its work was cut
	// short.
	timedOut := inf.stopWatches()
	var ended time.Time // zero: when sealed
	if timedOut {
		res, err = nil, ErrHandlerTimeout
	} else if inf.closing.Load() { // most streams never close: one load, and no call
		// The request ended now: the wait for its cause (StreamCloseGrace)
		// delays the label, not its recorded duration.
		ended = time.Now()
		inf.settleCause() // a stream close's: still in flight meanwhile
	}
	ss.mu.Lock()
	ss.st.incoming.remove(inf.req.ID)
	ss.st.sealing++
	// A session that ended (closed implies it) cancels first, as its
	// sweep would have had it reached the request: its cause decides.
	unswept := !timedOut && inf.endedUnswept()
	cancelled := (unswept || inf.ctx.Err() != nil) && !timedOut
	closed, broken := ss.st.closed, ss.st.broken
	ss.mu.Unlock()
	if unswept {
		inf.cancel(context.Cause(ss.ctx))
	}

	out := Outcome{Err: err, Ended: ended}
	if err == nil {
		out.Result = res
	}
	if cancelled {
		out.Cause = context.Cause(inf.ctx)
		ss.obs.RequestCancelled(inf.ctx, inf.req, out.Cause)
	}
	if !ss.single { // a single session's context is its request's: end cancels it
		inf.cancel(errRequestDone)
	}
	switch {
	case broken != protocol.DropNone:
		ss.seal(inf, out, broken, nil)
	case (closed || ss.ctx.Err() != nil && (!ss.single || !timedOut)) && ss.answeredAtEnd(inf, &out): // the session ends (a single one's own deadline is no end): its Conn answers
		ss.seal(inf, out, protocol.DropNone, nil) // cancelled, yet answered: what the client received
	case cancelled: // the session ending cancels first, so its cause decides
		ss.seal(inf, out, dropReasonOf(out.Cause), nil)
	case closed:
		ss.seal(inf, out, protocol.DropWriterClosed, nil)
	default:
		resp := ss.buildResponse(&inf.resp, inf.req, res, err)
		if r, rerr := ss.boundResult(resp, inf.req, res); r != nil || rerr != nil {
			out.Result, out.Err, out.ResultTooLarge = r, rerr, true
		}
		inf.req.heavy = len(inf.req.Params)+len(resp.Result) >= heavyOutcome
		if inf.batch != nil {
			inf.batch.add(resp, func(werr error) { ss.sealWrite(inf, out, werr) })
		} else {
			ss.sealWrite(inf, out, ss.write(inf.ctx, resp))
		}
	}
	// A drain that began meanwhile waits for this response to be written:
	// the last request to finish ends the session.
	ss.mu.Lock()
	ss.st.sealing--
	drained := ss.st.draining && ss.st.incoming.len() == 0 && ss.st.sealing == 0
	ss.mu.Unlock()
	if drained {
		ss.cancel(ErrShutdown)
	}
}

// answeredAtEnd reports whether the session's transport answered inf's
// request itself because the session ended under it (transport.EndAnswerer:
// a 2025 session deleted during the call gets -32000 "session
// terminated"); if so it sets out.Err to that answer.
func (ss *Session) answeredAtEnd(inf *inflight, out *Outcome) bool {
	a, ok := transport.As[transport.EndAnswerer](ss.conn)
	if !ok {
		return false
	}
	e := a.EndAnswer(inf.req.ID)
	if e == nil {
		return false
	}
	out.Err, out.Result = &Error{Code: protocol.Code(e.Code), Message: e.Message}, nil
	return true
}

// dropReasonOf names the drop of a request cancelled with cause by what
// happened, the same in both eras: a client's cancellation is cancelled,
// a shutdown shutdown, the client having left the request's own stream (a
// 2025 POST's, or a stateless request's, which is its whole connection:
// stream_close, or transport_close settled from one) peer_gone, and the
// session's transport closed under it writer_closed.
func dropReasonOf(cause error) protocol.DropReason {
	reason := ReasonOfCause(cause)
	switch {
	case reason == protocol.ReasonClientCancel:
		return protocol.DropCancelled
	case reason == protocol.ReasonShutdown:
		return protocol.DropShutdown
	case reason == protocol.ReasonStreamClose, errors.Is(cause, transport.ErrStreamGone):
		return protocol.DropPeerGone // its stream's reader left; the session lives on
	case reason == protocol.ReasonTransportClose:
		return protocol.DropWriterClosed
	default:
		return protocol.DropCancelled
	}
}

// buildResponse builds the answer to a request from what its chain
// returned, in resp (a zero Response), and returns resp.
func (ss *Session) buildResponse(resp *transport.Response, req *Request, res any, err error) *transport.Response {
	id := req.ID
	resp.ID = id
	if err != nil {
		resp.Error = wireError(err)
		return resp
	}
	if res == nil {
		resp.Result = json.RawMessage("{}")
		return resp
	}
	var raw []byte
	var merr error
	if r, ok := res.(*CallToolResult); ok && r.raw != nil {
		raw = r.raw // relayed as it was sent, decorated below
	} else if ok {
		if e, stateless := req.era.(*statelessEra); stateless {
			if raw, ok := e.appendToolResult(r); ok { // decorated as it is encoded
				resp.Result = raw
				return resp
			}
		}
		raw, merr = r.appendJSON(make([]byte, 0, r.encodedSizeHint()))
	} else if r, ok := res.(*ReadResourceResult); ok && r.encoded != nil {
		if raw := r.encoded.encodedFor(r, req.era); raw != nil { // a static skill file's, encoded at registration
			resp.Result, resp.Shared = raw, true
			return resp
		}
		raw, merr = json.Marshal(res)
	} else {
		raw, merr = json.Marshal(res)
	}
	if merr != nil {
		ss.logger().Error("cannot encode result", "id", id.String(), "error", merr)
		resp.Error = wireError(merr)
		return resp
	}
	if raw, merr = req.era.decorate(req.Method, raw); merr != nil {
		ss.logger().Error("cannot decorate result", "id", id.String(), "error", merr)
		resp.Error = wireError(merr)
		return resp
	}
	resp.Result = raw
	return resp
}

func (ss *Session) sealWrite(inf *inflight, out Outcome, werr error) {
	if werr == nil {
		ss.seal(inf, out, protocol.DropNone, nil)
		return
	}
	ss.seal(inf, out, writeClass(werr), werr)
}

// seal reports a request's outcome to the Observer and records it.
func (ss *Session) seal(inf *inflight, out Outcome, dropped protocol.DropReason, werr error) {
	out.Dropped, out.WriteErr = dropped, werr
	if out.Ended.IsZero() { // else the request ended before its stream close's cause settled
		out.Ended = time.Now()
	}
	if dropped != protocol.DropNone {
		ss.obs.ResponseDropped(inf.ctx, inf.req, dropped)
		ss.debug("response dropped", "method", inf.req.Method, "id", inf.req.ID.String(), "reason", dropped.String())
		if inf.batch != nil && werr == nil {
			inf.batch.skip()
		}
	}
	ss.srv.recordOutcome(inf.req, out)
}

// recordOutcome runs req's OnDone functions with its sealed outcome out,
// then hands the rest of its recording (recordEnd) to the batches (done
// at once without them).
func (s *Server) recordOutcome(req *Request, out Outcome) {
	req.ends.RunDone(out)
	if !req.ends.HasAfter() && (!s.endObserved || req.IsNotification()) {
		return
	}
	if s.outcomes == nil {
		s.recordEnd(req, out)
		return
	}
	s.outcomes.push(req, out)
}

func writeClass(err error) protocol.DropReason {
	if errors.Is(err, transport.ErrClosed) {
		return protocol.DropWriterClosed
	}
	return protocol.DropPeerGone
}

// write sends one message, unaffected by ctx's cancellation but bounded by the
// write timeout. A failure is reported once per write; the first one marks the
// writer broken and cancels every request in flight with ErrTransportClose,
// since none of them can be answered. The read loop goes on, so that the
// session still ends at the end of its input.
func (ss *Session) write(ctx context.Context, msg transport.Message) error {
	// Not ctx.Done() != nil to spare a context that is never done: on a
	// cancelable context that call makes the channel it returns.
	ctx = context.WithoutCancel(ctx)
	// An inline Conn writes into the response of the request at hand, which
	// its own server bounds; others may block on a peer that stopped reading.
	if d := ss.srv.cfg.writeTimeout; d > 0 && !ss.inline {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	err := ss.conn.Write(ctx, msg)
	if err == nil {
		return nil
	}
	class := writeClass(err)
	ss.obs.WriteFailed(ctx, ss, class, err)
	if errors.Is(err, transport.ErrStreamGone) {
		return err // one stream is gone; the connection is fine
	}
	ss.mu.Lock()
	first := ss.st.broken == protocol.DropNone && !ss.st.closed
	var victims []*inflight
	if first {
		ss.st.broken = class
		for _, inf := range ss.st.incoming.all() {
			victims = append(victims, inf)
		}
	}
	ss.mu.Unlock()
	if first {
		ss.debug("write failed: the session can no longer answer", "class", class.String(), "error", err)
		cause := fmt.Errorf("%w: %w", ErrTransportClose, err)
		for _, inf := range victims {
			inf.cancel(cause)
		}
	}
	return err
}

// notification handles m; arrival is the context it came with (see
// Request.ArrivalContext).
func (ss *Session) notification(arrival context.Context, m *transport.Request) {
	req := ss.newRequest(m)
	req.arrival = arrival
	switch m.Method {
	case "notifications/cancelled":
		ss.cancelRequest(m.Params)
	case "notifications/initialized":
		ss.mu.Lock()
		ready := ss.st.phase == phaseInitialized
		if ready {
			ss.st.phase = phaseReady
		}
		ss.mu.Unlock()
		if ready {
			ss.storeShared(arrival)
		}
	}
	ctx := &notificationCtx{ss.ctx, req}
	res, err := ss.srv.invoke(ctx, req)
	out := Outcome{Err: err, Ended: time.Now()}
	if err == nil {
		out.Result = res
	}
	ss.srv.recordOutcome(req, out)
}

// cancelSingle acts on a notification a stateless request's Conn delivers
// while the request runs: notifications/cancelled for it, which a later
// POST of the same caller brought (the transport matched them, see
// transport.Single). It cancels the request as the client's, and, as no
// 2026-07-28 notification does, reaches no handler.
func (ss *Session) cancelSingle(m *transport.Request) {
	if m.Method == "notifications/cancelled" {
		ss.cancelRequest(m.Params)
	}
}

// cancelRequest acts on notifications/cancelled. Unknown, finished and
// malformed ids are ignored, as is initialize. A request whose stream
// closed is still in flight until its cause settles (StreamCloseGrace):
// the notification makes it the client's cancel.
func (ss *Session) cancelRequest(params json.RawMessage) {
	var p cancelledParams
	var id transport.ID
	if json.Unmarshal(params, &p) != nil || id.UnmarshalJSON(p.RequestID) != nil {
		ss.obs.MessageRejected(ss.ctx, ss, protocol.CodeInvalidParams, protocol.RejectInvalidParams)
		return
	}
	ss.mu.Lock()
	inf := ss.st.incoming.get(id)
	ss.mu.Unlock()
	if inf == nil || inf.req.Method == "initialize" {
		return
	}
	cause := ErrClientCancel
	if p.Reason != "" {
		cause = fmt.Errorf("%w: %s", ErrClientCancel, truncateUTF8(p.Reason, maxClientText))
	}
	inf.cancel(cause)
	inf.clientCancelled(cause) // its stream closed first: the client says why
}

// initialize is the built-in handler of the initialize request.
func (ss *Session) initialize(req *Request) (any, error) {
	if len(req.Params) > maxInitializeParams {
		return nil, Errorf(protocol.CodeInvalidParams, "initialize params over %d bytes", maxInitializeParams)
	}
	var p initializeParams
	if err := json.Unmarshal(req.Params, &p); err != nil || p.ProtocolVersion == "" {
		return nil, Errorf(protocol.CodeInvalidParams, "invalid initialize params: protocolVersion, capabilities and clientInfo are required")
	}
	version := negotiate(p.ProtocolVersion)
	ss.mu.Lock()
	ss.st.phase, ss.st.version, ss.st.client, ss.st.caps = phaseInitialized, version, p.ClientInfo.bounded(), p.Capabilities.bounded()
	ss.mu.Unlock()
	ss.joinMulticast() // notify.go
	ss.storeShared(req.ArrivalContext())
	cfg := &ss.srv.cfg
	return &initializeResult{
		ProtocolVersion: version,
		Capabilities:    ss.srv.encodedCapabilities(),
		ServerInfo:      cfg.impl,
		Instructions:    ss.srv.Instructions(),
	}, nil
}
