package main

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/vigil-mcp/vigil/cmd/internal/benchkit"
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
	p := benchkit.NewPoster()
	benchkit.SetEchoHeaders(p.Header(), stateless, "6PgkS4Va3i0SOSPYYzWZsA")
	h := newFloor()
	payload := make([]byte, 0, 256)
	b.ReportAllocs()
	id := 0
	cpu := benchkit.ProcessCPU()
	for b.Loop() {
		id++
		payload = benchkit.AppendEchoCall(payload[:0], id, stateless)
		w := p.Post(b.Context(), h, payload)
		if w.Status() != http.StatusOK || !bytes.Contains(w.Body(), benchkit.EchoAnswer) {
			b.Fatalf("status %d: %s", w.Status(), w.Body())
		}
	}
	benchkit.ReportCPU(b, cpu)
}
