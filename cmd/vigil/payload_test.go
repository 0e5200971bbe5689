package main

import (
	"bytes"
	"context"
	"hash/crc32"
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/cmd/internal/benchkit"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// largeEcho is the text of the large-payload echo: 1 MiB of letters, no
// character that JSON escapes.
const largeEcho = 1 << 20

// largeEchoBudget is the most a 1 MiB echo may allocate, in the whole
// process (the client's side too, a few KiB): two copies of the payload
// (the request body, read into one buffer; the encoded result, written out
// as it is: echo's text shares the body's bytes) and half a payload for
// the rest (the body's first 64 KiB, the result's room for escapes,
// everything that is not the payload). One more copy of the payload
// anywhere on the way fails it.
const largeEchoBudget = 2*largeEcho + largeEcho/2

// TestLargeEchoAllocation calls echo with 1 MiB of text through the
// service as vigil runs it (run, its defaults, a real HTTP listener), in
// a 2025 session and stateless, and checks that a call allocates at most
// largeEchoBudget: two copies of the payload, not one per step of the
// way (the body grown by doubling, echo's text decoded into a string of
// its own, the result copied into the response's envelope).
func TestLargeEchoAllocation(t *testing.T) {
	base := runInProcess(t)
	for _, stateless := range []bool{false, true} {
		t.Run(map[bool]string{false: "2025", true: "2026"}[stateless], func(t *testing.T) {
			c := newLargeEchoClient(t, base, newLargeEchoCall(stateless), stateless)
			for range 2 { // the connection, the session's first call, the first answer kept whole
				c.echo(t)
			}
			const calls = 8
			before := heapAllocated()
			for range calls {
				c.echo(t)
			}
			perCall := (heapAllocated() - before) / calls
			t.Logf("%.2f payloads allocated per call (budget %.2f)", float64(perCall)/largeEcho, float64(largeEchoBudget)/largeEcho)
			require.LessOrEqual(t, perCall, uint64(largeEchoBudget), "bytes allocated per 1 MiB echo")
		})
	}
}

// BenchmarkLargeEcho calls echo with 1 MiB of text from 8 clients at once
// (each its own connection and, in 2025, session) through the service as
// vigil runs it, and reports the bytes allocated per call in payloads
// (payloads/op) and the heap's peak during the calls in MiB
// (peak-heap-MiB: its objects, live or not yet swept, whose peak the
// heap's part of RSS follows), in a process whose heap is a few MiB
// besides:
//
//	go test -run '^$' -bench LargeEcho -benchtime 200x ./cmd/vigil
func BenchmarkLargeEcho(b *testing.B) {
	base := runInProcess(b)
	for _, stateless := range []bool{false, true} {
		b.Run(map[bool]string{false: "2025", true: "2026"}[stateless], func(b *testing.B) {
			const clients = 8
			call := newLargeEchoCall(stateless)
			cs := make([]*largeEchoClient, clients)
			for i := range cs {
				cs[i] = newLargeEchoClient(b, base, call, stateless)
				cs[i].echo(b)
			}
			runtime.GC() // the first answers, read whole, are garbage
			allocStart := heapAllocated()
			var peak peakSampler
			peak.start(heapObjects)
			var next sync.Mutex
			n := 0
			var wg sync.WaitGroup
			b.ResetTimer()
			for _, c := range cs {
				wg.Go(func() {
					for {
						next.Lock()
						more := n < b.N
						n++
						next.Unlock()
						if !more {
							return
						}
						c.echo(b)
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(heapAllocated()-allocStart)/float64(b.N)/largeEcho, "payloads/op")
			b.ReportMetric(float64(peak.stop())/(1<<20), "peak-heap-MiB")
		})
	}
}

// largeEchoCall is the call every largeEchoClient of an era sends, the
// same bytes for all (each client has a session of its own, or none), so
// that the clients' memory is one payload, not one per client.
type largeEchoCall struct {
	body []byte
	text []byte // the text as the answer holds it, quoted
}

func newLargeEchoCall(stateless bool) *largeEchoCall {
	text := bytes.Repeat([]byte("abcdefghijklmnopqrstuvwxyz"), largeEcho/26+1)[:largeEcho]
	c := &largeEchoCall{text: append(append(append([]byte(nil), '"'), text...), '"')}
	c.body = append(c.body, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":`...)
	c.body = append(c.body, c.text...)
	c.body = append(c.body, '}')
	if stateless {
		c.body = append(c.body, `,"_meta":`+benchkit.Meta2026...)
	}
	c.body = append(c.body, "}}"...)
	return c
}

// largeEchoClient calls echo on one connection of its own, in a 2025
// session or stateless. Its first answer is read whole and checked; the
// later ones are checked against it as they stream by (their length and
// CRC), not kept.
type largeEchoClient struct {
	hc        *http.Client
	url       string
	call      *largeEchoCall
	stateless bool
	session   string
	answers   int
	size      int64
	sum       uint32
}

func newLargeEchoClient(tb testing.TB, base string, call *largeEchoCall, stateless bool) *largeEchoClient {
	tb.Helper()
	c := &largeEchoClient{hc: &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}, url: base + "/mcp", call: call, stateless: stateless}
	tb.Cleanup(c.hc.CloseIdleConnections)
	if !stateless {
		init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + protocol.Version20250618 + `","capabilities":{},"clientInfo":{"name":"large-echo","version":"1"}}}`
		resp, _ := c.post(tb, []byte(init), http.StatusOK, io.Discard)
		c.session = resp.Header.Get("Mcp-Session-Id")
		require.NotEmpty(tb, c.session)
		c.post(tb, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), http.StatusAccepted, io.Discard)
	}
	return c
}

// echo calls echo and checks that the text came back.
func (c *largeEchoClient) echo(tb testing.TB) {
	if c.answers++; c.answers == 1 {
		var first bytes.Buffer
		_, c.size = c.post(tb, c.call.body, http.StatusOK, &first)
		if !bytes.Contains(first.Bytes(), c.call.text) {
			tb.Fatalf("the answer does not hold the text: %.200s", first.Bytes())
		}
		c.sum = crc32.ChecksumIEEE(first.Bytes())
		return
	}
	var sum crcWriter
	if _, size := c.post(tb, c.call.body, http.StatusOK, &sum); size != c.size || uint32(sum) != c.sum {
		tb.Fatalf("answer %d: %d bytes, CRC %08x; the first: %d bytes, CRC %08x", c.answers, size, uint32(sum), c.size, c.sum)
	}
}

// crcWriter keeps the CRC-32 (IEEE) of what is written to it.
type crcWriter uint32

func (w *crcWriter) Write(p []byte) (int, error) {
	*w = crcWriter(crc32.Update(uint32(*w), crc32.IEEETable, p))
	return len(p), nil
}

// post sends body, checks that the answer has status want and copies it
// to answer; it returns the response and the answer's length.
func (c *largeEchoClient) post(tb testing.TB, body []byte, want int, answer io.Writer) (*http.Response, int64) {
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	require.NoError(tb, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.stateless {
		req.Header.Set("MCP-Protocol-Version", protocol.Version20260728)
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "echo")
	} else if c.session != "" {
		req.Header.Set("MCP-Protocol-Version", protocol.Version20250618)
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	resp, err := c.hc.Do(req)
	require.NoError(tb, err)
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != want {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		tb.Fatalf("status %d: %s", resp.StatusCode, msg)
	}
	n, err := io.Copy(answer, resp.Body)
	require.NoError(tb, err)
	return resp, n
}

// runInProcess runs vigil in this process (run, as main does) on a free
// loopback port with args besides, and returns its base URL; it stops
// when the test ends.
func runInProcess(tb testing.TB, args ...string) string {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &firstURL{found: make(chan string, 1)}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-http", "127.0.0.1:0"}, args...), func(string) string { return "" }, logs)
	}()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("run: %v", err)
		}
	})
	select {
	case u := <-logs.found:
		return strings.TrimSuffix(u, "/mcp")
	case err := <-done:
		done <- err
		tb.Fatalf("vigil stopped before serving: %v", err)
		return ""
	}
}

// firstURL is the log of an in-process vigil: it finds the URL of the
// "serving MCP" line and drops the rest, so that the log costs no memory
// that grows with the requests.
type firstURL struct {
	found chan string // gets the URL, once
	mu    sync.Mutex
	head  []byte
	sent  bool
}

func (w *firstURL) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sent {
		return len(p), nil
	}
	w.head = append(w.head, p...)
	if m := servingLine.FindSubmatch(w.head); m != nil {
		w.found <- string(m[1])
		w.sent, w.head = true, nil
	}
	return len(p), nil
}

// heapAllocated returns the bytes the process allocated on the heap so
// far (runtime/metrics, cumulative).
func heapAllocated() uint64 { return readMetric("/gc/heap/allocs:bytes") }

// heapObjects returns the bytes of the heap's objects, live or not yet
// swept.
func heapObjects() uint64 { return readMetric("/memory/classes/heap/objects:bytes") }

func readMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// peakSampler keeps the largest value of a reading taken every
// millisecond between start and stop.
type peakSampler struct {
	quit chan struct{}
	done chan uint64
}

func (p *peakSampler) start(read func() uint64) {
	p.quit, p.done = make(chan struct{}), make(chan uint64)
	go func() {
		peak := read()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				peak = max(peak, read())
			case <-p.quit:
				p.done <- max(peak, read())
				return
			}
		}
	}()
}

func (p *peakSampler) stop() uint64 {
	close(p.quit)
	return <-p.done
}
