package benchkit

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Recorder is the http.ResponseWriter of the in-process handler
// benchmarks (cmd/vigil's BenchmarkServiceHandler and the floor's
// BenchmarkFloorHandler): it keeps the last response and costs both
// handlers the same, less than httptest.ResponseRecorder, which copies the
// header of every response. Reset readies it for the next request. It is
// not safe for concurrent use.
type Recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{header: http.Header{}} }

// Reset forgets the last response.
func (w *Recorder) Reset() {
	clear(w.header)
	w.status = 0
	w.body.Reset()
}

// Header returns the response's header.
func (w *Recorder) Header() http.Header { return w.header }

// WriteHeader records the status code, the first one only.
func (w *Recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

// Write records p as part of the body (and status 200 if none was set).
func (w *Recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(p)
}

// Flush does nothing: the response is kept whole.
func (*Recorder) Flush() {}

// Status returns the response's status code, 0 before any.
func (w *Recorder) Status() int { return w.status }

// Body returns the response's body so far.
func (w *Recorder) Body() []byte { return w.body.Bytes() }

// Poster sends the handler benchmarks' POSTs: each one a copy of a
// request with a body and a context of its own (as net/http gives it),
// answered into one Recorder. Both benchmarks post through it, so that
// each request costs the two handlers' benchmarks the same work around
// the handler. It is not safe for concurrent use.
type Poster struct {
	req  *http.Request
	body bytes.Reader
	w    *Recorder
}

// NewPoster returns a Poster of POSTs to http://127.0.0.1:8080/mcp with
// no header yet (see Header).
func NewPoster() *Poster {
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:8080/mcp", nil)
	return &Poster{req: req, w: NewRecorder()}
}

// Header returns the header every POST carries.
func (p *Poster) Header() http.Header { return p.req.Header }

// Post sends payload to h with a context of ctx's, cancelled once h
// returns, and returns the answer, valid until the next Post.
func (p *Poster) Post(ctx context.Context, h http.Handler, payload []byte) *Recorder {
	rctx, cancel := context.WithCancel(ctx)
	p.body.Reset(payload)
	r := p.req.WithContext(rctx)
	r.Body, r.ContentLength = io.NopCloser(&p.body), int64(len(payload))
	p.w.Reset()
	h.ServeHTTP(p.w, r)
	cancel()
	return p.w
}

// Meta2026 is the _meta of every 2026-07-28 request the benchmarks send.
const Meta2026 = `{"` + vocab.MetaProtocolVersion + `":"` + protocol.Version20260728 + `","` + vocab.MetaClientCapabilities + `":{}}`

// EchoAnswer is in the body of every answer to the handler benchmarks'
// tools/call echo, the floor's and vigil's, of either era.
var EchoAnswer = []byte(`"text":"hello"`)

// SetEchoHeaders sets on h the headers of the handler benchmarks' POSTs of
// tools/call echo: those of a request in the 2025-06-18 session sid or,
// when stateless, those of a 2026-07-28 request.
func SetEchoHeaders(h http.Header, stateless bool, sid string) {
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	if stateless {
		h.Set("MCP-Protocol-Version", protocol.Version20260728)
		h.Set("Mcp-Method", "tools/call")
		h.Set("Mcp-Name", "echo")
		return
	}
	h.Set("MCP-Protocol-Version", protocol.Version20250618)
	h.Set("Mcp-Session-Id", sid)
}

// AppendEchoCall appends to b the body of the handler benchmarks' tools/call
// echo with JSON-RPC id id, with Meta2026 as its _meta when stateless.
func AppendEchoCall(b []byte, id int, stateless bool) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, int64(id), 10)
	b = append(b, `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}`...)
	if stateless {
		b = append(b, `,"_meta":`+Meta2026...)
	}
	return append(b, "}}"...)
}

// ReportCPU reports the process's CPU time per request since start (a
// [ProcessCPU] reading taken before the loop) as "cpu-ns/op": with the
// work of other goroutines counted, it is what a request costs the
// machine, closer to the service benchmark's CPU per request than ns/op.
func ReportCPU(b *testing.B, start time.Duration) {
	if b.N > 0 {
		b.ReportMetric(float64(ProcessCPU()-start)/float64(b.N), "cpu-ns/op")
	}
}
