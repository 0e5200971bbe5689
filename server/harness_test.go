package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/vigil-mcp/vigil/transport/protocol"

	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
)

// drop is one ResponseDropped report.
type drop struct {
	ID     string
	Reason protocol.DropReason
}

// recorder is an Observer that keeps everything it is told.
type recorder struct {
	mu        sync.Mutex
	started   int
	ended     []error
	cancelled map[string]error
	drops     []drop
	writes    []protocol.DropReason
	outgoing  []error
	panics    []any
	rejected  []protocol.Code
	ends      int       // RequestEnded's calls
	dropped   chan drop // every drop, for tests that wait on one
}

func newRecorder() *recorder {
	return &recorder{cancelled: make(map[string]error), dropped: make(chan drop, 20000)}
}

func (r *recorder) RequestEnded(context.Context, *server.Request, server.Outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ends++
}

func (r *recorder) SessionStarted(context.Context, *server.Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started++
}

func (r *recorder) SessionEnded(_ context.Context, _ *server.Session, cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = append(r.ended, cause)
}

func (r *recorder) RequestCancelled(_ context.Context, req *server.Request, cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.cancelled[req.ID.String()]; dup {
		panic("RequestCancelled twice for " + req.ID.String())
	}
	r.cancelled[req.ID.String()] = cause
}

func (r *recorder) ResponseDropped(_ context.Context, req *server.Request, reason protocol.DropReason) {
	d := drop{req.ID.String(), reason}
	r.mu.Lock()
	r.drops = append(r.drops, d)
	r.mu.Unlock()
	r.dropped <- d
}

func (r *recorder) WriteFailed(_ context.Context, _ *server.Session, class protocol.DropReason, _ error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, class)
}

func (r *recorder) OutgoingFailed(_ context.Context, _ *server.Session, _ string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outgoing = append(r.outgoing, err)
}

func (r *recorder) HandlerPanicked(_ context.Context, _ *server.Request, v any, _ []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.panics = append(r.panics, v)
}

func (r *recorder) MessageRejected(_ context.Context, _ *server.Session, code protocol.Code, _ protocol.RejectReason) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rejected = append(r.rejected, code)
}

// observer returns the hooks of r, every one of them.
func (r *recorder) observer() server.Observer {
	return server.Observer{RequestEnded: r.RequestEnded, SessionStarted: r.SessionStarted, SessionEnded: r.SessionEnded, RequestCancelled: r.RequestCancelled, ResponseDropped: r.ResponseDropped, WriteFailed: r.WriteFailed, OutgoingFailed: r.OutgoingFailed, HandlerPanicked: r.HandlerPanicked, MessageRejected: r.MessageRejected}
}

func (r *recorder) snapshotDrops() []drop {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]drop(nil), r.drops...)
}

// spyConn wraps a Conn and counts writes attempted after Close.
type spyConn struct {
	transport.Conn
	closed           atomic.Bool
	writesAfterClose atomic.Int64
}

func (c *spyConn) Write(ctx context.Context, m transport.Message) error {
	if c.closed.Load() {
		c.writesAfterClose.Add(1)
	}
	return c.Conn.Write(ctx, m)
}

func (c *spyConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

// levelCounter is a slog.Handler that counts records by level.
type levelCounter struct {
	mu     sync.Mutex
	counts map[slog.Level]int
}

func (h *levelCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h *levelCounter) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.counts == nil {
		h.counts = make(map[slog.Level]int)
	}
	h.counts[r.Level]++
	return nil
}
func (h *levelCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *levelCounter) WithGroup(string) slog.Handler      { return h }
func (h *levelCounter) count(l slog.Level) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[l]
}

// harness is one server with one client session over the memory transport.
type harness struct {
	*mcptest.Client // set by start
	t               testing.TB
	srv             *server.Server
	obs             *recorder
	logs            *levelCounter
	spy             *spyConn
}

func newHarness(t testing.TB, opts ...server.Option) *harness {
	h := &harness{t: t, obs: newRecorder(), logs: &levelCounter{}}
	opts = append([]server.Option{server.WithObserver(h.obs.observer()), server.WithLogger(slog.New(h.logs))}, opts...)
	h.srv = server.New(opts...)
	return h
}

// start begins one session on the harness's server.
func (h *harness) start() *harness {
	h.Client = mcptest.Pipe(h.t, h.srv, mcptest.WithServerConn(func(end transport.Conn) transport.Conn {
		h.spy = &spyConn{Conn: end}
		return h.spy
	}))
	return h
}

// second begins another session on the same server.
func (h *harness) second() *harness {
	h2 := &harness{t: h.t, srv: h.srv, obs: h.obs, logs: h.logs}
	return h2.start()
}

func (h *harness) addTool(name string, fn server.ToolHandler) {
	require.NoError(h.t, h.srv.AddTool(server.Tool{Name: name, Description: name}, fn))
}

func rawJSON(v any) json.RawMessage {
	if s, ok := v.(string); ok {
		return json.RawMessage(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// toolText extracts the single text item of a tools/call result.
func toolText(t testing.TB, result json.RawMessage) (string, bool) {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	require.NoError(t, json.Unmarshal(result, &r))
	require.Len(t, r.Content, 1, "result: %s", result)
	return r.Content[0].Text, r.IsError
}
