package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/vigil-mcp/vigil/internal/benchservice"
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
	benchservice.SetEchoHeaders(req.Header, stateless, "6PgkS4Va3i0SOSPYYzWZsA")
	w := benchservice.NewRecorder()
	var body bytes.Reader
	payload := make([]byte, 0, 256)
	b.ReportAllocs()
	id := 0
	for b.Loop() {
		id++
		payload = benchservice.AppendEchoCall(payload[:0], id, stateless)
		// Each request has a context of its own, as net/http gives it
		// (and cmd/vigil's benchmark does).
		rctx, cancel := context.WithCancel(b.Context())
		body.Reset(payload)
		r := req.WithContext(rctx)
		r.Body, r.ContentLength = io.NopCloser(&body), int64(len(payload))
		w.Reset()
		handle(w, r)
		cancel()
		if w.Status() != http.StatusOK || !bytes.Contains(w.Body(), benchservice.EchoAnswer) {
			b.Fatalf("status %d: %s", w.Status(), w.Body())
		}
	}
}
