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

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
)

// rig is one server instrumented with Metrics and Observer, and one client
// session over the memory transport.
type rig struct {
	*mcptest.Client // set by start
	t               testing.TB
	m               *metrics.Metrics
	reg             *prometheus.Registry
	srv             *server.Server
	conn            transport.Conn // the server's end, as wrapped
}

// newRig builds the server: Metrics outermost, then extra middleware.
func newRig(t testing.TB, extra []server.Middleware, opts ...server.Option) *rig {
	r := &rig{t: t, m: metrics.New(middleware.MetricsVocabulary()), reg: prometheus.NewRegistry()}
	r.reg.MustRegister(r.m)
	mw := append([]server.Middleware{middleware.RecordMetrics(r.m)}, extra...)
	opts = append([]server.Option{server.WithMiddleware(mw...), server.WithObserver(middleware.MetricsObserver(r.m))}, opts...)
	r.srv = server.New(opts...)
	addTools(t, r.srv)
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
		"roots": func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			_, err := server.ListRoots(ctx)
			return nil, err
		},
	}
	for name, h := range tools {
		require.NoError(t, srv.AddTool(server.Tool{Name: name, Description: name}, h))
	}
	require.NoError(t, srv.AddTool(server.Tool{Name: "strict", InputSchema: strictSchema}, tools["echo"]))
}

// strictSchema is the input schema of the "strict" tool: {"n": integer}
// and nothing else.
var strictSchema = json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`)

// start serves one session; wrap, if not nil, wraps the server's end.
func (r *rig) start(wrap func(transport.Conn) transport.Conn) *rig {
	return r.startCtx(context.Background(), wrap)
}

// startCtx serves one session with ctx as the Serve context.
func (r *rig) startCtx(ctx context.Context, wrap func(transport.Conn) transport.Conn) *rig {
	inst := middleware.CountConns(r.srv, r.m, telemetry.TransportMemory)
	r.Client = mcptest.Pipe(r.t, inst, mcptest.WithServeContext(ctx),
		mcptest.WithServerConn(func(end transport.Conn) transport.Conn {
			r.conn = end
			if wrap != nil {
				r.conn = wrap(end)
			}
			return r.conn
		}))
	return r
}

// failing returns the server's end when start wrapped it in a failingConn.
func (r *rig) failing() *failingConn {
	fc, ok := r.conn.(*failingConn)
	require.True(r.t, ok)
	return fc
}

// close ends the session from the client side and waits for Serve.
func (r *rig) close() {
	_ = r.Close()
	require.NoError(r.t, r.Wait())
}

// series returns every series of the collector whose value is not zero, as
// `name{label="value",...}` → value; a histogram contributes its _count and
// _sum. Families whose name contains one of skip are left out. The
// semantic conventions' protocol version and network labels, and empty
// status code and session error_type labels, are left out too (series of
// the same other labels add up): allSeries keeps them.
func series(t testing.TB, c prometheus.Collector, skip ...string) map[string]float64 {
	return gatherSeries(t, c, true, skip...)
}

// allSeries is series with every label.
func allSeries(t testing.TB, c prometheus.Collector) map[string]float64 {
	return gatherSeries(t, c, false)
}

func gatherSeries(t testing.TB, c prometheus.Collector, collapse bool, skip ...string) map[string]float64 {
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
			key := labelString(m.GetLabel(), collapse)
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
		out[key] += v
	}
}

func labelString(labels []*dto.LabelPair, collapse bool) string {
	parts := make([]string, 0, len(labels))
	for _, l := range labels {
		switch name := l.GetName(); {
		case collapse && (name == mcpconv.LabelProtocolVersion || name == mcpconv.LabelNetTransport || name == mcpconv.LabelNetProtocol):
			continue
		case collapse && l.GetValue() == "" && (name == mcpconv.LabelStatusCode || name == mcpconv.LabelErrorType && hasLabel(labels, mcpconv.LabelCause)):
			continue
		case collapse && (name == mcpconv.LabelErrorType || name == mcpconv.LabelStatusCode) && hasLabel(labels, mcpconv.LabelProtocolVersion):
			continue // the request duration: one count per method and tool, whatever the outcome
		}
		parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
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

func hasLabel(labels []*dto.LabelPair, name string) bool {
	for _, l := range labels {
		if l.GetName() == name {
			return true
		}
	}
	return false
}
