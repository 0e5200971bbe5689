package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/vigil-mcp/vigil/internal/asyncwriter"
	"github.com/vigil-mcp/vigil/telemetry"
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
	cfg, err := parseConfig(nil, func(string) string { return "" }, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	logOut := asyncwriter.New(io.Discard)
	b.Cleanup(func() { _ = logOut.Close() })
	logger := newLogger(cfg, logOut)
	in, err := newInstruments(ctx, cfg.traceRing)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = in.shutdown(context.Background()) })
	srv, inst, err := newServer(cfg, logger, in, newEventLog(), nil)
	if err != nil {
		b.Fatal(err)
	}
	h := streamable.New(inst.ConnServer(srv, telemetry.TransportStreamableHTTP),
		streamable.WithLogger(logger), streamable.WithMaxBodyBytes(cfg.maxBody),
		streamable.WithMaxSessions(cfg.maxSessions), streamable.WithMaxInFlight(cfg.maxInFlight),
		streamable.WithIdleTimeout(cfg.idleTimeout))
	b.Cleanup(func() { _ = h.Close() })

	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:8080/mcp", nil)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	w := &benchWriter{header: http.Header{}}
	var body bytes.Reader
	post := func(payload []byte) {
		// Each request has a context of its own, as net/http gives it.
		rctx, cancel := context.WithCancel(ctx)
		body.Reset(payload)
		r := req.WithContext(rctx)
		r.Body, r.ContentLength = io.NopCloser(&body), int64(len(payload))
		w.reset()
		h.ServeHTTP(w, r)
		cancel()
		if w.status != http.StatusOK && w.status != http.StatusAccepted {
			b.Fatalf("status %d: %s", w.status, w.body.String())
		}
	}
	meta := ""
	if stateless {
		req.Header.Set("MCP-Protocol-Version", protocol.Version20260728)
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "echo")
		meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	} else {
		post([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + protocol.Version20250618 + `","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`))
		req.Header.Set("Mcp-Session-Id", w.Header().Get("Mcp-Session-Id"))
		req.Header.Set("MCP-Protocol-Version", protocol.Version20250618)
		post([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	}
	want := []byte(`"text":"hello"`)
	payload := make([]byte, 0, 256)
	b.ReportAllocs()
	id := 0
	for b.Loop() {
		id++
		payload = append(payload[:0], `{"jsonrpc":"2.0","id":`...)
		payload = strconv.AppendInt(payload, int64(id), 10)
		payload = append(payload, `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}`+meta+`}}`...)
		post(payload)
		if !bytes.Contains(w.body.Bytes(), want) {
			b.Fatalf("answer: %s", w.body.String())
		}
	}
}

// benchWriter is an http.ResponseWriter that keeps the last response.
type benchWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *benchWriter) reset() {
	clear(w.header)
	w.status = 0
	w.body.Reset()
}

func (w *benchWriter) Header() http.Header { return w.header }

func (w *benchWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *benchWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(p)
}

func (*benchWriter) Flush() {}
