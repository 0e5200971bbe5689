package server_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// tagObserver appends "tag:event" to a shared log for every event.
type tagObserver struct {
	tag string
	log *tagLog
}

// tagLog is the log of tagObservers.
type tagLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *tagLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func (o tagObserver) add(event string) {
	o.log.mu.Lock()
	defer o.log.mu.Unlock()
	o.log.lines = append(o.log.lines, o.tag+":"+event)
}

func (o tagObserver) RequestEnded(context.Context, *server.Request, server.Outcome) {
	o.add("request")
}

func (o tagObserver) SessionStarted(context.Context, *server.Session)          { o.add("started") }
func (o tagObserver) SessionEnded(context.Context, *server.Session, error)     { o.add("ended") }
func (o tagObserver) RequestCancelled(context.Context, *server.Request, error) { o.add("cancelled") }

func (o tagObserver) ResponseDropped(context.Context, *server.Request, protocol.DropReason) {
	o.add("dropped")
}

func (o tagObserver) WriteFailed(context.Context, *server.Session, protocol.DropReason, error) {
	o.add("write")
}

func (o tagObserver) OutgoingFailed(context.Context, *server.Session, string, error) {
	o.add("outgoing")
}

func (o tagObserver) HandlerPanicked(context.Context, *server.Request, any, []byte) { o.add("panic") }

func (o tagObserver) MessageRejected(context.Context, *server.Session, protocol.Code, protocol.RejectReason) {
	o.add("rejected")
}

// observer returns the hooks of o, every one of them.
func (o tagObserver) observer() server.Observer {
	return server.Observer{RequestEnded: o.RequestEnded, SessionStarted: o.SessionStarted, SessionEnded: o.SessionEnded, RequestCancelled: o.RequestCancelled, ResponseDropped: o.ResponseDropped, WriteFailed: o.WriteFailed, OutgoingFailed: o.OutgoingFailed, HandlerPanicked: o.HandlerPanicked, MessageRejected: o.MessageRejected}
}

// Observers given to WithObserver, in one call or in several, all hear
// of every event, in the order they were given; a nil hook is skipped.
func TestWithObserverAdds(t *testing.T) {
	t.Parallel()
	testkit.Watchdog(t)
	var log tagLog
	a, b := tagObserver{"a", &log}, tagObserver{"b", &log}
	h := newHarness(t, server.WithObserver(a.observer(), server.Observer{}), server.WithObserver(b.observer())).start()
	h.Initialize("2025-11-25", nil)
	h.Request(2, "ping", nil)
	h.RecvResult(2)
	_ = h.Close()
	require.NoError(t, h.Wait())
	assert.Equal(t, []string{"a:started", "b:started", "a:request", "b:request", "a:request", "b:request", "a:ended", "b:ended"}, log.get(),
		"initialize and ping ended, in the session")
}

// TestRejectReasonsReachTheObserver pins the reasons the core reports for
// the refusals telemetry classifies by comparing with the Reject constants.
func TestRejectReasonsReachTheObserver(t *testing.T) {
	t.Parallel()
	testkit.Watchdog(t)
	var reasons reasonRecorder
	h := newHarness(t, server.WithObserver(server.Observer{MessageRejected: reasons.MessageRejected}), server.WithMaxInFlightPerSession(2)).start()
	block := make(chan struct{})
	h.addTool("block", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return &server.CallToolResult{}, nil
	})
	h.SendCallTool(1, "block", nil)
	assert.Equal(t, int64(protocol.CodeInvalidRequest), h.RecvError(1).Code)
	h.Initialize("2025-11-25", nil)
	h.Request(1, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	assert.Equal(t, int64(protocol.CodeInvalidRequest), h.RecvError(1).Code)
	h.SendCallTool(2, "block", nil)
	h.SendCallTool(2, "block", nil)
	assert.Equal(t, int64(protocol.CodeInvalidRequest), h.RecvError(2).Code)
	h.SendCallTool(3, "block", nil)
	h.SendCallTool(4, "block", nil)
	assert.Equal(t, int64(protocol.CodeServerBusy), h.RecvError(4).Code)
	close(block)
	got := []transport.ID{h.RecvResponse().ID, h.RecvResponse().ID}
	assert.ElementsMatch(t, []transport.ID{transport.Int64ID(2), transport.Int64ID(3)}, got)
	_ = h.Close()
	require.NoError(t, h.Wait())
	assert.Equal(t, []protocol.RejectReason{
		protocol.RejectLifecycle, protocol.RejectLifecycle, protocol.RejectDuplicateID, protocol.RejectInFlightLimit,
	}, reasons.get())
}

// reasonRecorder keeps the reasons of MessageRejected.
type reasonRecorder struct {
	mu      sync.Mutex
	reasons []protocol.RejectReason
}

func (r *reasonRecorder) MessageRejected(_ context.Context, _ *server.Session, _ protocol.Code, reason protocol.RejectReason) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reasons = append(r.reasons, reason)
}

func (r *reasonRecorder) get() []protocol.RejectReason {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]protocol.RejectReason(nil), r.reasons...)
}

// singleConn is a transport.Single Conn: it reads one stateless request,
// then reports its end once the answer was written.
type singleConn struct {
	req     transport.Message
	read    bool
	written chan transport.Message // buffered: the answer
	answer  chan struct{}          // closed once it was written
	closed  chan struct{}
	once    sync.Once
}

func (c *singleConn) Read(ctx context.Context) (transport.Message, error) {
	if !c.read {
		c.read = true
		return c.req, nil
	}
	select {
	case <-c.answer:
		return nil, transport.ErrPeerGone
	case <-c.closed:
		return nil, transport.ErrClosed
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func (c *singleConn) Write(_ context.Context, m transport.Message) error {
	c.written <- m
	close(c.answer)
	return nil
}

func (c *singleConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (*singleConn) SingleRequest() {}

// A transport.Single conn's request is served, and its session, which is
// only the request's, is reported to no observer as a session; its handler
// runs on the session's context.
func TestSingleConnIsNoSession(t *testing.T) {
	t.Parallel()
	var log tagLog
	srv := server.New(server.WithObserver(tagObserver{"o", &log}.observer()))
	var handlerCtx context.Context
	listed := -1
	require.NoError(t, srv.AddTool(server.Tool{Name: "echo"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		handlerCtx, listed = ctx, len(srv.Sessions())
		return server.Text("hi"), nil
	}))
	msg, err := transport.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	require.NoError(t, err)
	conn := &singleConn{req: msg, written: make(chan transport.Message, 1), answer: make(chan struct{}), closed: make(chan struct{})}
	require.True(t, isSingleConn(conn))
	require.False(t, isSingleConn(struct{ transport.Conn }{conn}), "a Conn that embeds one is not a Wrapper")

	require.ErrorIs(t, srv.Serve(context.Background(), conn), transport.ErrPeerGone)
	resp, ok := (<-conn.written).(*transport.Response)
	require.True(t, ok)
	require.Nil(t, resp.Error)
	assert.Contains(t, string(resp.Result), `"text":"hi"`)
	assert.Equal(t, 1, listed, "listed while its request is in flight")
	assert.Equal(t, []string{"o:request"}, log.get(), "no session started or ended: only the request")
	assert.Empty(t, srv.Sessions())
	require.Error(t, handlerCtx.Err(), "the session's end cancelled the handler's context")
	assert.ErrorIs(t, context.Cause(handlerCtx), server.ErrTransportClose)
}

// isSingleConn reports whether c, or a Conn beneath it, is transport.Single.
func isSingleConn(c transport.Conn) bool {
	_, ok := transport.As[transport.Single](c)
	return ok
}

// wiredOption is an option that wants what the server lends, as package
// middleware's and the live page's are.
type wiredOption struct {
	server.Option
	lent []*serverhook.Server
}

func (o *wiredOption) WireServer(s *serverhook.Server) { o.lent = append(o.lent, s) }

// An option that implements serverhook.Wired is handed, at New, what the
// server lends (itself, its flush, the methods it serves), and the
// observer it registers hears of events as any other.
func TestWiredOptionIsLentTheServer(t *testing.T) {
	t.Parallel()
	testkit.Watchdog(t)
	var log tagLog
	o := &wiredOption{Option: server.WithObserver(tagObserver{"w", &log}.observer())}
	h := newHarness(t, o).start()
	require.Len(t, o.lent, 1, "once, at New")
	assert.Same(t, h.srv, o.lent[0].ID)
	assert.Contains(t, o.lent[0].Methods(), "ping")
	assert.True(t, o.lent[0].HasMethod("tools/list"))
	h.Initialize("2025-11-25", nil)
	_ = h.Close()
	require.NoError(t, h.Wait())
	o.lent[0].Flush()
	assert.Equal(t, []string{"w:started", "w:request", "w:ended"}, log.get())
}
