package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// BenchmarkFloorHandler serves tools/call echo through the floor's handler,
// in process and on one goroutine, with the requests cmd/vigil's
// BenchmarkServiceHandler sends (2025: in a session, by its id; 2026:
// stateless, with the routing headers and _meta): the same work measured
// on both sides of the service benchmark, without the network. make
// bench-footprint compares the two under cachegrind.
func BenchmarkFloorHandler(b *testing.B) {
	b.Run("2025", func(b *testing.B) { benchFloorHandler(b, false) })
	b.Run("2026", func(b *testing.B) { benchFloorHandler(b, true) })
}

func benchFloorHandler(b *testing.B, stateless bool) {
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:8080/mcp", nil)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	meta := ""
	if stateless {
		req.Header.Set("MCP-Protocol-Version", protocol.Version20260728)
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "echo")
		meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	} else {
		req.Header.Set("MCP-Protocol-Version", protocol.Version20250618)
		req.Header.Set("Mcp-Session-Id", "6PgkS4Va3i0SOSPYYzWZsA")
	}
	w := &recorder{header: http.Header{}}
	var body bytes.Reader
	want := []byte(`"text":"hello"`)
	payload := make([]byte, 0, 256)
	b.ReportAllocs()
	id := 0
	for b.Loop() {
		id++
		payload = append(payload[:0], `{"jsonrpc":"2.0","id":`...)
		payload = strconv.AppendInt(payload, int64(id), 10)
		payload = append(payload, `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}`+meta+`}}`...)
		// Each request has a context of its own, as net/http gives it
		// (and cmd/vigil's benchmark does).
		rctx, cancel := context.WithCancel(b.Context())
		body.Reset(payload)
		r := req.WithContext(rctx)
		r.Body, r.ContentLength = io.NopCloser(&body), int64(len(payload))
		w.reset()
		handle(w, r)
		cancel()
		if w.status != http.StatusOK || !bytes.Contains(w.body.Bytes(), want) {
			b.Fatalf("status %d: %s", w.status, w.body.String())
		}
	}
}

// recorder is an http.ResponseWriter that keeps the last response.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) reset() {
	clear(w.header)
	w.status = 0
	w.body.Reset()
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(p)
}
