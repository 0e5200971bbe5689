package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// rig is one server instrumented with Metrics and Observer, and one client
// session over the memory transport.
type rig struct {
	t      testing.TB
	m      *telemetry.Metrics
	reg    *prometheus.Registry
	srv    *server.Server
	client *memory.Conn
	conn   transport.Conn // the server's end, as wrapped
	served chan error
}

// newRig builds the server: Metrics outermost, then extra middleware.
func newRig(t testing.TB, extra []server.Middleware, opts ...server.Option) *rig {
	r := &rig{t: t, m: telemetry.NewMetrics(), reg: prometheus.NewRegistry()}
	r.reg.MustRegister(r.m)
	mw := append([]server.Middleware{middleware.RecordMetrics(r.m)}, extra...)
	opts = append([]server.Option{server.WithMiddleware(mw...), server.WithObserver(middleware.MetricsObserver(r.m))}, opts...)
	r.srv = server.New(opts...)
	addTools(t, r.srv)
	r.m.SetToolNames(r.srv.ToolNames())
	return r
}

// addTools registers the tools the scenarios call.
func addTools(t testing.TB, srv *server.Server) {
	text := func(s string) *server.CallToolResult {
		return &server.CallToolResult{Content: []server.Content{&server.TextContent{Text: s}}}
	}
	tools := map[string]server.ToolHandler{
		"echo": func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) { return text("hi"), nil },
		"fail": func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return nil, errors.New("the tool failed") // becomes an isError result
		},
		"block": func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
		"sleep": func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			time.Sleep(1500 * time.Millisecond) // fake time in a bubble
			return text("slept"), nil
		},
		"panic": func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) { panic("boom") },
		"roots": func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
			_, err := req.Request.Session.ListRoots(ctx)
			return nil, err
		},
	}
	for name, h := range tools {
		require.NoError(t, srv.AddTool(server.Tool{Name: name, Description: name}, h))
	}
}

// start serves one session; wrap, if not nil, wraps the server's end.
func (r *rig) start(wrap func(transport.Conn) transport.Conn) *rig {
	return r.startCtx(context.Background(), wrap)
}

// startCtx serves one session with ctx as the Serve context.
func (r *rig) startCtx(ctx context.Context, wrap func(transport.Conn) transport.Conn) *rig {
	client, end := memory.NewPair()
	var conn transport.Conn = end
	if wrap != nil {
		conn = wrap(end)
	}
	r.client, r.conn, r.served = client, conn, make(chan error, 1)
	inst := middleware.CountConns(r.srv, r.m, telemetry.TransportMemory)
	go func() { r.served <- inst.Serve(ctx, conn) }()
	return r
}

// failing returns the server's end when start wrapped it in a failingConn.
func (r *rig) failing() *failingConn {
	fc, ok := r.conn.(*failingConn)
	require.True(r.t, ok)
	return fc
}

func (r *rig) send(m transport.Message) {
	require.NoError(r.t, r.client.Write(context.Background(), m))
}

func (r *rig) request(id int64, method string, params any) {
	m := &transport.Request{ID: transport.Int64ID(id), Method: method}
	if params != nil {
		b, err := json.Marshal(params)
		require.NoError(r.t, err)
		m.Params = b
	}
	r.send(m)
}

func (r *rig) notify(method string, params any) {
	b, err := json.Marshal(params)
	require.NoError(r.t, err)
	r.send(&transport.Request{Method: method, Params: b})
}

func (r *rig) callTool(id int64, name string) {
	r.request(id, "tools/call", map[string]any{"name": name, "arguments": map[string]any{}})
}

func (r *rig) recv() transport.Message {
	m, err := r.client.Read(context.Background())
	require.NoError(r.t, err)
	return m
}

func (r *rig) recvResponse(id int64) *transport.Response {
	resp, ok := r.recv().(*transport.Response)
	require.True(r.t, ok)
	require.Equal(r.t, transport.Int64ID(id), resp.ID)
	return resp
}

func (r *rig) initialize(caps any) {
	if caps == nil {
		caps = map[string]any{}
	}
	r.request(1, "initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    caps,
		"clientInfo":      map[string]any{"name": "test", "version": "1"},
	})
	require.Nil(r.t, r.recvResponse(1).Error)
	r.notify("notifications/initialized", nil)
}

// close ends the session from the client side and waits for Serve.
func (r *rig) close() {
	_ = r.client.Close()
	require.NoError(r.t, <-r.served)
}

// series returns every series of the collector whose value is not zero, as
// `name{label="value",...}` → value; a histogram contributes its _count and
// _sum. Families whose name contains one of skip are left out.
func series(t testing.TB, c prometheus.Collector, skip ...string) map[string]float64 {
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := make(map[string]float64)
families:
	for _, mf := range mfs {
		for _, s := range skip {
			if strings.Contains(mf.GetName(), s) {
				continue families
			}
		}
		for _, m := range mf.GetMetric() {
			key := labelString(m.GetLabel())
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				put(out, mf.GetName()+key, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				put(out, mf.GetName()+key, m.GetGauge().GetValue())
			case dto.MetricType_HISTOGRAM:
				put(out, mf.GetName()+"_count"+key, float64(m.GetHistogram().GetSampleCount()))
				put(out, mf.GetName()+"_sum"+key, m.GetHistogram().GetSampleSum())
			default:
				t.Fatalf("unexpected metric type %v", mf.GetType())
			}
		}
	}
	return out
}

func put(out map[string]float64, key string, v float64) {
	if v != 0 {
		out[key] = v
	}
}

func labelString(labels []*dto.LabelPair) string {
	parts := make([]string, len(labels))
	for i, l := range labels {
		parts[i] = fmt.Sprintf("%s=%q", l.GetName(), l.GetValue())
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// failingConn fails every write while fail is set, as if the peer vanished.
type failingConn struct {
	transport.Conn
	fail atomic.Bool
}

func (c *failingConn) Write(ctx context.Context, m transport.Message) error {
	if c.fail.Load() {
		return fmt.Errorf("test: write: %w", transport.ErrPeerGone)
	}
	return c.Conn.Write(ctx, m)
}

// timeoutMiddleware cancels the handler's context after d with
// server.ErrHandlerTimeout and answers with that cause, as a Timeout
// middleware does.
func timeoutMiddleware(d time.Duration) server.Middleware {
	return func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			ctx, cancel := context.WithTimeoutCause(ctx, d, server.ErrHandlerTimeout)
			defer cancel()
			res, err := next(ctx, req)
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return res, err
		}
	}
}

// watchdog fails a test that hangs, for tests outside a synctest bubble.
func watchdog(t testing.TB) {
	timer := time.AfterFunc(60*time.Second, func() { panic(t.Name() + ": hung for 60s") })
	t.Cleanup(func() { timer.Stop() })
}
