package streamable_test

// Throughput of tools/call echo over loopback HTTP, 32 concurrent clients:
// Vigil (a 2025 session per client, and 2026-07-28 stateless requests)
// against the floor, a plain net/http handler that decodes the same
// JSON-RPC request and writes the same result. The ratio is Vigil's req/s
// over the floor's, from one run of both:
//
//	go test -run '^$' -bench 'HTTPEcho' -benchtime=3s -count=3 ./transport/streamable/
//
// The load and what each benchmark reports (req/s, p99-µs, cpu-µs/op) are
// those of loadgen.Bench.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/vigil-mcp/vigil/internal/loadgen"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// benchWorkers is the number of concurrent clients.
const benchWorkers = 32

// benchEchoBody is the tools/call echo request with the given id; meta is
// the _meta object or "".
func benchEchoBody(dst []byte, id int64, meta string) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendInt(dst, id, 10)
	dst = append(dst, `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}`...)
	if meta != "" {
		dst = append(dst, `,"_meta":`...)
		dst = append(dst, meta...)
	}
	return append(dst, "}}"...)
}

// benchWant is in every answer: 2025 results, 2026 ones (with resultType
// and _meta), and the floor's.
var benchWant = []byte(`"content":[{"type":"text","text":"hello"}]`)

// benchClient is a keep-alive client whose connections close with b.
func benchClient(b *testing.B) *http.Client {
	client := loadgen.NewClient()
	b.Cleanup(client.CloseIdleConnections)
	return client
}

// benchVigil starts Vigil with the echo tool behind a loopback server.
func benchVigil(b *testing.B) (*httptest.Server, *http.Client) {
	srv := server.New()
	err := srv.AddTool(server.Tool{
		Name:        "echo",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
	}, func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		var in struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(req.Arguments, &in); err != nil {
			return nil, err
		}
		return server.Text(in.Text), nil
	})
	if err != nil {
		b.Fatal(err)
	}
	h := streamable.New(srv)
	ts := httptest.NewServer(h)
	client := benchClient(b)
	// Last in, first out: the client's connections, the sessions, the server.
	b.Cleanup(ts.Close)
	b.Cleanup(func() { _ = h.Close() })
	b.Cleanup(client.CloseIdleConnections)
	return ts, client
}

// BenchmarkHTTPEchoVigil: a 2025 session per worker, JSON responses.
func BenchmarkHTTPEchoVigil(b *testing.B) {
	ts, client := benchVigil(b)
	sids := make([]string, benchWorkers)
	for w := range sids {
		sid, err := loadgen.OpenSession(client, ts.URL, "2025-11-25")
		if err != nil {
			b.Fatal(err)
		}
		sids[w] = sid
	}
	loadgen.Bench(b, client, benchWorkers, benchWant, func(w int, id int64) *http.Request {
		return loadgen.SessionPost(ts.URL, sids[w], "2025-11-25", benchEchoBody(nil, id, ""))
	})
}

// BenchmarkHTTPEchoVigilStateless: 2026-07-28 stateless requests (for
// information: each request is a session of its own).
func BenchmarkHTTPEchoVigilStateless(b *testing.B) {
	ts, client := benchVigil(b)
	const meta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	loadgen.Bench(b, client, benchWorkers, benchWant, func(_ int, id int64) *http.Request {
		req := loadgen.Post(ts.URL, benchEchoBody(nil, id, meta))
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "echo")
		return req
	})
}

// benchFloorHandler is the floor: decode the JSON-RPC request with
// encoding/json, check the method and tool, write the echo result.
func benchFloorHandler(w http.ResponseWriter, r *http.Request) {
	var req struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  struct {
			Name      string `json:"name"`
			Arguments struct {
				Text string `json:"text"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.JSONRPC != "2.0" ||
		req.Method != "tools/call" || req.Params.Name != "echo" || len(req.ID) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	text, _ := json.Marshal(req.Params.Arguments.Text) // a string always encodes
	out := make([]byte, 0, 128)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, req.ID...)
	out = append(out, `,"result":{"content":[{"type":"text","text":`...)
	out = append(out, text...)
	out = append(out, "}]}}"...)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// BenchmarkHTTPEchoFloor: the plain net/http handler.
func BenchmarkHTTPEchoFloor(b *testing.B) {
	ts := httptest.NewServer(http.HandlerFunc(benchFloorHandler))
	client := benchClient(b)
	b.Cleanup(ts.Close)
	b.Cleanup(client.CloseIdleConnections)
	loadgen.Bench(b, client, benchWorkers, benchWant, func(_ int, id int64) *http.Request {
		return loadgen.Post(ts.URL, benchEchoBody(nil, id, ""))
	})
}
