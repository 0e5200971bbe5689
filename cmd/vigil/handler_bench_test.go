package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-mcp/vigil"
	"github.com/vigil-mcp/vigil/cmd/internal/benchkit"
	"github.com/vigil-mcp/vigil/debugpage"
	"github.com/vigil-mcp/vigil/internal/asyncwriter"
	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// BenchmarkServiceHandler serves tools/call echo through the shipped
// service's MCP handler, as cmd/vigil wires it with its defaults (a span
// per request into the trace ring, metrics, a log line per request, the
// debug page's stats, the timeout and the concurrency limit), in process
// and on one goroutine: what vigil adds to net/http's own work per
// request, without the network and the scheduler's noise, for comparing
// one change with another (benchstat):
//
//	go test -run '^$' -bench ServiceHandler -benchmem -count 10 ./cmd/vigil
//
// The service as users run it is measured by make bench-service.
func BenchmarkServiceHandler(b *testing.B) {
	b.Run("2025", func(b *testing.B) { benchServiceHandler(b, false) })
	b.Run("2026", func(b *testing.B) { benchServiceHandler(b, true) })
}

func benchServiceHandler(b *testing.B, stateless bool) {
	ctx := b.Context()
	h, flush := newServiceHandler(b, io.Discard)

	p := benchkit.NewPoster()
	p.Header().Set("Content-Type", "application/json")
	p.Header().Set("Accept", "application/json, text/event-stream")
	post := func(payload []byte) *benchkit.Recorder {
		w := p.Post(ctx, h, payload)
		if w.Status() != http.StatusOK && w.Status() != http.StatusAccepted {
			b.Fatalf("status %d: %s", w.Status(), w.Body())
		}
		return w
	}
	if !stateless {
		w := post([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + protocol.Version20250618 + `","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`))
		benchkit.SetEchoHeaders(p.Header(), false, w.Header().Get("Mcp-Session-Id"))
		post([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	} else {
		benchkit.SetEchoHeaders(p.Header(), true, "")
	}
	payload := make([]byte, 0, 256)
	b.ReportAllocs()
	id := 0
	cpu := benchkit.ProcessCPU()
	for b.Loop() {
		id++
		payload = benchkit.AppendEchoCall(payload[:0], id, stateless)
		if w := post(payload); !bytes.Contains(w.Body(), benchkit.EchoAnswer) {
			b.Fatalf("answer: %s", w.Body())
		}
		if id%outcomeBatch == 0 {
			// What the server's batch runner does under load, here at
			// a fixed point: the counts of a run do not depend on when
			// the runner's goroutine gets the thread.
			flush()
		}
	}
	benchkit.ReportCPU(b, cpu)
}

// outcomeBatch is the service's batch of outcomes (vigil's
// server.WithOutcomeBatches).
const outcomeBatch = 32

// newServiceHandler returns the shipped service's MCP endpoint as
// cmd/vigil wires it with its defaults, its log written to logTo, closed
// when tb ends, and the flush of its server's outcome batches.
func newServiceHandler(tb testing.TB, logTo io.Writer) (*streamable.Endpoint, func()) {
	cfg, err := parseConfig(nil, func(string) string { return "" }, io.Discard)
	if err != nil {
		tb.Fatal(err)
	}
	logOut := asyncwriter.New(logTo)
	tb.Cleanup(func() { _ = logOut.Close() })
	page := debugpage.NewRecorder(debugpage.WithTraceRing(cfg.traceRing, 0))
	f := &flusher{Option: server.WithObserver()}
	svc, err := newService(cfg, newLogger(cfg, logOut), prometheus.NewRegistry(), page, nil, vigil.WithServerOptions(f))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = svc.Shutdown(context.Background()) })
	svc.AdminHandler() // the page's handler keys the trace ring by the server's names, as in vigil
	return svc.Endpoint(), f.flush
}

// flusher is a server.Option that keeps the outcome flush of the server
// it is given to, as the instrumentation's collector does: server.New
// hands it over (serverhook.Wired).
type flusher struct {
	server.Option // an observer of nothing
	flush         func()
}

func (f *flusher) WireServer(s *serverhook.Server) { f.flush = s.Flush }
