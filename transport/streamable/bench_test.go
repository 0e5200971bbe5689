package streamable_test

// Throughput of tools/call echo over loopback HTTP, 32 concurrent clients:
// Vigil (a 2025 session per client, and 2026-07-28 stateless requests)
// against the floor, a plain net/http handler that decodes the same
// JSON-RPC request and writes the same result. The ratio is Vigil's req/s
// over the floor's, from one run of both:
//
//	go test -run '^$' -bench 'HTTPEcho' -benchtime=3s -count=3 ./transport/streamable/
//
// Each benchmark reports req/s, the p99 latency of one request as the
// client saw it (p99-µs) and, on Linux, the process's CPU time per request
// (cpu-µs/op, client and server together, 10 ms resolution: less sensitive
// than req/s to other load on the machine; meaningful with -benchtime of
// seconds).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// benchWorkers is the number of concurrent clients.
const benchWorkers = 32

// benchClient is tuned for keep-alive: one connection per worker stays open.
func benchClient(b *testing.B) *http.Client {
	tr := &http.Transport{MaxIdleConns: 128, MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}
	b.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

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

// benchDo sends one request and checks the answer.
func benchDo(client *http.Client, req *http.Request, buf *bytes.Buffer) error {
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(buf.Bytes(), benchWant) {
		return fmt.Errorf("%s: %s", resp.Status, buf.Bytes())
	}
	return nil
}

// benchRun runs b.N requests over benchWorkers goroutines; newReq[w]
// builds worker w's request with a unique id. It reports req/s and p99.
func benchRun(b *testing.B, client *http.Client, newReq []func(id int64) *http.Request) {
	lat := make([][]time.Duration, benchWorkers)
	for w := range lat {
		lat[w] = make([]time.Duration, 0, b.N/benchWorkers+1)
	}
	errs := make([]error, benchWorkers)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	cpu0, cpuOK := benchCPU()
	b.ResetTimer()
	for w := range benchWorkers {
		wg.Go(func() {
			var buf bytes.Buffer
			for {
				id := next.Add(1)
				if id > int64(b.N) {
					return
				}
				start := time.Now()
				if err := benchDo(client, newReq[w](id), &buf); err != nil {
					errs[w] = err
					return
				}
				lat[w] = append(lat[w], time.Since(start))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	cpu1, _ := benchCPU()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	p99 := all[min(len(all)-1, len(all)*99/100)]
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	b.ReportMetric(float64(p99)/float64(time.Microsecond), "p99-µs")
	if cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	}
}

// benchCPU returns the CPU time (user and system) the process used so far,
// from /proc/self/stat; false where there is none.
func benchCPU() (time.Duration, bool) {
	raw, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(raw, ')') // the command name may hold spaces
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(raw[i+1:])) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(utime+stime) * tick, true
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

func benchPost(url string, body []byte) *http.Request {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		panic(err) // the URL and method are fixed
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return req
}

// benchSession opens a 2025 session (initialize, notifications/initialized).
func benchSession(b *testing.B, client *http.Client, url string) string {
	resp, err := client.Do(benchPost(url, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)))
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		b.Fatalf("initialize: %s, session %q", resp.Status, sid)
	}
	req := benchPost(url, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if resp, err = client.Do(req); err != nil {
		b.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b.Fatalf("notifications/initialized: %s", resp.Status)
	}
	return sid
}

// BenchmarkHTTPEchoVigil: a 2025 session per worker, JSON responses.
func BenchmarkHTTPEchoVigil(b *testing.B) {
	ts, client := benchVigil(b)
	newReq := make([]func(int64) *http.Request, benchWorkers)
	for w := range newReq {
		sid := benchSession(b, client, ts.URL)
		newReq[w] = func(id int64) *http.Request {
			req := benchPost(ts.URL, benchEchoBody(nil, id, ""))
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
			return req
		}
	}
	benchRun(b, client, newReq)
}

// BenchmarkHTTPEchoVigilStateless: 2026-07-28 stateless requests (for
// information: each request is a session of its own).
func BenchmarkHTTPEchoVigilStateless(b *testing.B) {
	ts, client := benchVigil(b)
	const meta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	newReq := make([]func(int64) *http.Request, benchWorkers)
	for w := range newReq {
		newReq[w] = func(id int64) *http.Request {
			req := benchPost(ts.URL, benchEchoBody(nil, id, meta))
			req.Header.Set("MCP-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", "echo")
			return req
		}
	}
	benchRun(b, client, newReq)
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
	newReq := make([]func(int64) *http.Request, benchWorkers)
	for w := range newReq {
		newReq[w] = func(id int64) *http.Request { return benchPost(ts.URL, benchEchoBody(nil, id, "")) }
	}
	benchRun(b, client, newReq)
}
