package streamable_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// bytesServer returns a server whose tool "hold" reports each call on
// started and answers once release is closed (or the call is cancelled),
// with a result of the size its argument "answer" asks.
func bytesServer(t *testing.T) (srv *server.Server, started chan struct{}, release chan struct{}) {
	t.Helper()
	srv = htServer(t)
	started, release = make(chan struct{}, 16), make(chan struct{})
	require.NoError(t, srv.AddTool(server.Tool{Name: "hold"}, func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		var in struct{ Answer int }
		_ = json.Unmarshal(req.Arguments, &in)
		started <- struct{}{}
		select {
		case <-release:
			return server.Text(strings.Repeat("r", in.Answer)), nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}))
	return srv, started, release
}

// holdCall is a call of hold with an argument padded to about pad bytes.
func holdCall(id, pad int) string {
	return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"tools/call","params":{"name":"hold","arguments":{"pad":"` + strings.Repeat("p", pad) + `"}}}`
}

// A caller's request bodies held at once are limited in bytes: a body that
// would take it over its quota is refused with 429, Retry-After and the
// bytes quota before it is read; a small one (an answer the server waits
// for must get through) is read, and refused with its id only if it is a
// request; another caller is served meanwhile; once the held calls end,
// the caller holds nothing and is served again.
func TestQuotaBytesPerCaller(t *testing.T) {
	srv, started, release := bytesServer(t)
	var quotas tally[protocol.Quota]
	var rejects tally[protocol.RejectReason]
	h := streamable.New(srv, streamable.WithQuotas(streamable.Quotas{Bytes: 100 << 10, MemoryBudget: -1, OnRefuse: quotas.add}),
		streamable.WithRejectHook(rejects.add))
	t.Cleanup(func() { _ = h.Close(); _ = srv.Close() })
	a := quotaInit(t, h, "192.0.2.1").Header().Get("Mcp-Session-Id")
	b := quotaInit(t, h, "192.0.2.2").Header().Get("Mcp-Session-Id")

	var wg sync.WaitGroup
	wg.Go(func() {
		w := quotaPost(h, "192.0.2.1", a, holdCall(1, 60<<10))
		assert.Equal(t, http.StatusOK, w.Code, w.Body.String())
	})
	<-started
	held, _ := streamable.HeldBytes(h, "192.0.2.1")
	assert.Equal(t, len(holdCall(1, 60<<10)), held, "the held call's body is counted")

	quotaRefusal(t, quotaPost(h, "192.0.2.1", a, holdCall(2, 70<<10)), protocol.QuotaBytes, "1")
	w := quotaPost(h, "192.0.2.1", a, holdCall(3, 50<<10))
	quotaRefusal(t, w, protocol.QuotaBytes, "1")
	assert.Contains(t, w.Body.String(), `"id":3`, "a small request is read, and refused with its id")
	w = quotaPost(h, "192.0.2.1", a, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":1,"pad":"`+strings.Repeat("p", 50<<10)+`"}}`)
	assert.Equal(t, http.StatusAccepted, w.Code, "a small notification past the quota gets through")
	w = quotaPost(h, "192.0.2.1", a, `{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	assert.Equal(t, http.StatusOK, w.Code, "a request within the quota is served: %s", w.Body)
	wg.Go(func() {
		w := quotaPost(h, "192.0.2.2", b, holdCall(5, 90<<10))
		assert.Equal(t, http.StatusOK, w.Code, "another caller is served: %s", w.Body)
	})
	<-started // b's call, held
	assert.Equal(t, 2, quotas.get(protocol.QuotaBytes))
	assert.Equal(t, 2, rejects.get(protocol.RejectInFlightLimit))

	close(release)
	wg.Wait()
	held, total := streamable.HeldBytes(h, "192.0.2.1")
	assert.Zero(t, held, "released once answered")
	assert.Zero(t, total)
	w = quotaPost(h, "192.0.2.1", a, holdCall(6, 90<<10))
	assert.Equal(t, http.StatusOK, w.Code, "served again: %s", w.Body)
}

// The process's memory budget holds over all callers: a body that would
// take what all hold past it is refused with 503, Retry-After and the
// memory_budget reason before it is read, whoever sends it; a body that
// fits is served.
func TestMemoryBudget(t *testing.T) {
	srv, started, release := bytesServer(t)
	var rejects tally[protocol.RejectReason]
	h := streamable.New(srv, streamable.WithQuotas(streamable.Quotas{Bytes: -1, MemoryBudget: 100 << 10}), streamable.WithRejectHook(rejects.add))
	t.Cleanup(func() { _ = h.Close(); _ = srv.Close() })
	a := quotaInit(t, h, "192.0.2.1").Header().Get("Mcp-Session-Id")
	b := quotaInit(t, h, "192.0.2.2").Header().Get("Mcp-Session-Id")

	var wg sync.WaitGroup
	wg.Go(func() {
		w := quotaPost(h, "192.0.2.1", a, holdCall(1, 60<<10))
		assert.Equal(t, http.StatusOK, w.Code, w.Body.String())
	})
	<-started
	w := quotaPost(h, "192.0.2.2", b, holdCall(2, 60<<10))
	require.Equal(t, http.StatusServiceUnavailable, w.Code, w.Body.String())
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
	assert.Contains(t, w.Body.String(), protocol.RejectMemoryBudget.Message())
	assert.Equal(t, 1, rejects.get(protocol.RejectMemoryBudget))
	w = quotaPost(h, "192.0.2.2", b, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	assert.Equal(t, http.StatusOK, w.Code, "a body that fits is served: %s", w.Body)

	close(release)
	wg.Wait()
	_, total := streamable.HeldBytes(h, "192.0.2.1")
	assert.Zero(t, total, "released once answered")
}

// blockedWriter is a response whose large writes wait for release, as a
// client that does not read: it reports each on writing.
type blockedWriter struct {
	*httptest.ResponseRecorder
	writing chan int
	release chan struct{}
}

func (w *blockedWriter) Write(p []byte) (int, error) {
	if len(p) > 8<<10 {
		w.writing <- len(p)
		<-w.release
	}
	return w.ResponseRecorder.Write(p)
}

// An answer not yet written counts against its caller's byte quota, and
// the process's budget, until it is: while a client does not read a large
// answer its next large request is refused; once written it holds nothing.
func TestQuotaBytesCountsUnwrittenAnswers(t *testing.T) {
	srv, started, release := bytesServer(t)
	close(release) // hold answers at once
	var quotas tally[protocol.Quota]
	h := streamable.New(srv, streamable.WithQuotas(streamable.Quotas{Bytes: 200 << 10, OnRefuse: quotas.add}))
	t.Cleanup(func() { _ = h.Close(); _ = srv.Close() })
	a := quotaInit(t, h, "192.0.2.1").Header().Get("Mcp-Session-Id")

	var wg sync.WaitGroup
	bw := blockedPost(&wg, h, a, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hold","arguments":{"answer":300000}}}`)
	<-started
	n := <-bw.writing // the answer is being written, and not taken
	held, total := streamable.HeldBytes(h, "192.0.2.1")
	assert.GreaterOrEqual(t, held, 300000, "the unwritten answer (%d bytes written at once) counts", n)
	assert.GreaterOrEqual(t, total, 300000)
	quotaRefusal(t, quotaPost(h, "192.0.2.1", a, holdCall(2, 70<<10)), protocol.QuotaBytes, "1")

	close(bw.release)
	wg.Wait()
	assert.Equal(t, http.StatusOK, bw.Code)
	held, total = streamable.HeldBytes(h, "192.0.2.1")
	assert.Zero(t, held, "written: released")
	assert.Zero(t, total)
}

// A static skill file's read is written from the encoding every read
// shares: while a client does not read it, it holds no memory of its own,
// so it is not counted against the caller's bytes (only its envelope's
// are), and the caller's next request is served.
func TestQuotaBytesSkipSharedAnswers(t *testing.T) {
	srv := htServer(t)
	require.NoError(t, srv.AddSkill(server.Skill{Path: "big", FS: fstest.MapFS{
		"SKILL.md": {Data: []byte("---\nname: big\ndescription: big\n---\n")},
		"big.txt":  {Data: []byte(strings.Repeat("s", 300000))},
	}}))
	var quotas tally[protocol.Quota]
	h := streamable.New(srv, streamable.WithQuotas(streamable.Quotas{Bytes: 200 << 10, OnRefuse: quotas.add}))
	t.Cleanup(func() { _ = h.Close(); _ = srv.Close() })
	a := quotaInit(t, h, "192.0.2.1").Header().Get("Mcp-Session-Id")

	var wg sync.WaitGroup
	bw := blockedPost(&wg, h, a, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"skill://big/big.txt"}}`)
	<-bw.writing // the answer is being written, and not taken
	held, _ := streamable.HeldBytes(h, "192.0.2.1")
	assert.Less(t, held, 4<<10, "the shared encoding (300,000 bytes) does not count")
	assert.Equal(t, http.StatusOK, quotaPost(h, "192.0.2.1", a, holdCall(2, 70<<10)).Code, "the caller's next request is served")

	close(bw.release)
	wg.Wait()
	assert.Equal(t, http.StatusOK, bw.Code)
	assert.Contains(t, bw.Body.String(), strings.Repeat("s", 1000))
	assert.Zero(t, quotas.get(protocol.QuotaBytes))
}

// blockedPost serves body, POSTed by 192.0.2.1 in session sid, on a
// goroutine of wg, into a blockedWriter whose first Write waits for its
// release.
func blockedPost(wg *sync.WaitGroup, h http.Handler, sid, body string) *blockedWriter {
	r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
	r.RemoteAddr = "192.0.2.1:40000"
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Mcp-Session-Id", sid)
	r.Header.Set("MCP-Protocol-Version", "2025-11-25")
	bw := &blockedWriter{ResponseRecorder: httptest.NewRecorder(), writing: make(chan int, 1), release: make(chan struct{})}
	wg.Go(func() { h.ServeHTTP(bw, r) })
	return bw
}
