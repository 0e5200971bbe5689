package debugpage

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/receiving"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// hostileText returns a text of about n bytes unique to i, of two-byte
// runes after its prefix, so that a cut at a fixed byte count may fall
// inside one.
func hostileText(i, n int) string {
	p := "x" + strconv.Itoa(i) + "-"
	return p + strings.Repeat("é", max(n-len(p), 0)/2)
}

// retainedHeap is the live heap after two collections (sync.Pool caches
// go in two).
func retainedHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestHostileDebugBound replays the name bomb on the page's structures,
// through a real chain (tracing into the ring, the stats recorder, the
// event log) built from the public packages as a user's server is:
// thousands of unique methods, tool names and JSON-RPC ids as long as the
// core admits, and long cancel reasons and client names, which the core
// cuts. Then no made-up name is a key of the stats or of the ring, a real
// tool is still counted by name, every text kept is cut on a rune
// boundary, and what the heap retained, the in-use figures and the page's
// JSON all stay within the bound the page prints.
func TestHostileDebugBound(t *testing.T) {
	ctx := t.Context()
	rec := NewRecorder()
	tp, shutdown := receiving.NewProvider(rec.SpanExporter().(receiving.SpanReceiver))
	t.Cleanup(func() { _ = shutdown(context.Background()) })
	inst, err := middleware.NewInstrumentation(
		middleware.WithTracerProvider(tp),
		middleware.WithRegisterer(prometheus.NewRegistry()),
		middleware.WithRequestLog(slog.New(slog.DiscardHandler)),
	)
	require.NoError(t, err)
	srv := server.New(append(inst.ServerOptions(), rec.ServerOption(), server.WithOutcomeBatches(32, 0),
		server.WithTimeout(time.Minute), server.WithConcurrencyLimit(256))...)
	require.NoError(t, addTestTools(srv))
	conns := inst.ConnServer(srv, telemetry.TransportMemory)
	page := mountPage(Handler(srv, rec))
	ring := rec.traceRing()
	require.NotNil(t, ring, "spans go to the ring")

	const (
		sessions     = 12
		junkPerKind  = 50      // per session: methods, tool names
		cancels      = 12      // per session
		nameBytes    = 128     // each made-up method and tool name: the most the core admits
		idBytes      = 256     // each made-up id: likewise
		textBytes    = 8 << 10 // each cancel reason, client name and version (the core cuts them)
		maxKeptBytes = ringAttrValueMaxLen + len("…")
	)
	// session runs one session; hostile sends the bomb, else one call of
	// echo only.
	session := func(n int, hostile bool) {
		client, conn := memory.NewPair()
		served := make(chan error, 1)
		go func() { served <- conns.Serve(ctx, conn) }()
		write := func(m transport.Message) { require.NoError(t, client.Write(ctx, m)) }
		call := func(id transport.ID, method string, params any) *transport.Response {
			p, err := json.Marshal(params)
			require.NoError(t, err)
			write(&transport.Request{ID: id, Method: method, Params: p})
			m, err := client.Read(ctx)
			require.NoError(t, err)
			resp, ok := m.(*transport.Response)
			require.True(t, ok, "%T", m)
			return resp
		}
		name := "t"
		if hostile {
			name = hostileText(n, textBytes)
		}
		resp := call(transport.Int64ID(0), "initialize", map[string]any{
			"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": name, "version": name},
		})
		require.Nil(t, resp.Error)
		write(&transport.Request{Method: "notifications/initialized"})
		require.Nil(t, call(transport.Int64ID(1), "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}).Error)
		if hostile {
			for i := range junkPerKind {
				k := n*junkPerKind + i
				id := transport.StringID(hostileText(k, idBytes))
				resp := call(id, hostileText(k, nameBytes), map[string]any{})
				require.NotNil(t, resp.Error)
				assert.Equal(t, int64(-32601), resp.Error.Code)
				resp = call(id, "tools/call", map[string]any{"name": hostileText(k, nameBytes), "arguments": map[string]any{}})
				require.True(t, resp.Error != nil || strings.Contains(string(resp.Result), `"isError":true`), "%s", resp.Result)
			}
			for i := range cancels {
				id := transport.StringID(hostileText(n*cancels+i, idBytes))
				p, _ := json.Marshal(map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 60000}})
				write(&transport.Request{ID: id, Method: "tools/call", Params: p})
				p, _ = json.Marshal(map[string]any{"requestId": id, "reason": hostileText(i, textBytes)})
				write(&transport.Request{Method: "notifications/cancelled", Params: p})
			}
			require.Nil(t, call(transport.Int64ID(2), "ping", map[string]any{}).Error)
		}
		require.NoError(t, client.Close())
		if err := <-served; !errors.Is(err, server.ErrServerClosed) {
			require.NoError(t, err)
		}
	}
	snapshot := func() (debugSnapshot, []byte) {
		rec.events.flush(srv)
		w := httptest.NewRecorder()
		page.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/debug/vigil?format=json&series=1", nil))
		require.Equal(t, http.StatusOK, w.Code)
		var snap debugSnapshot
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &snap))
		return snap, w.Body.Bytes()
	}

	session(-1, false) // the structures' first allocations
	snapshot()
	before := retainedHeap()
	for n := range sessions {
		session(n, true)
	}
	session(-2, false)
	snap, body := snapshot()
	grown := retainedHeap() - before

	bound := snap.Memory.Total
	t.Logf("retained %d B, page JSON %d B, printed bound %d B", grown, len(body), bound)
	assert.LessOrEqual(t, grown, bound, "the heap retained more than the printed bound")
	assert.LessOrEqual(t, int64(len(body)), bound, "the JSON body is larger than the printed bound")
	assert.Less(t, len(body), 16<<20)
	assert.LessOrEqual(t, snap.Memory.StatsInUse, snap.Memory.StatsBound)
	assert.LessOrEqual(t, snap.Memory.RingInUse, snap.Memory.RingBound)
	assert.Equal(t, statsBoundBytes()+eventsBoundBytes(rec.events.liveSessions())+ring.memory().Bound, bound)

	// Only names the server knows are keys; a real tool keeps its row.
	var keys []string
	for _, row := range snap.Stats {
		keys = append(keys, row.Key)
		method, tool, _ := strings.Cut(row.Key, " ")
		assert.True(t, row.Key == statsOtherKey || rec.events.hasMethod(srv)(method) && (tool == "" || registered(srv, tool)), "stats key %.40q", row.Key)
	}
	assert.Contains(t, keys, "tools/call echo")
	assert.Contains(t, keys, statsOtherKey)
	for _, row := range snap.Stats {
		if row.Key == "tools/call echo" {
			assert.Equal(t, uint64(sessions+2), row.Total.Requests, "every echo counted by name")
		}
	}
	for _, k := range ring.keyNames() {
		method, tool, _ := strings.Cut(k, " ")
		assert.True(t, k == ringOtherKey || rec.events.hasMethod(srv)(method) && (tool == "" || registered(srv, tool)), "ring key %.40q", k)
	}

	// Every text the page kept or shows is cut.
	require.NotEmpty(t, snap.Cancellations)
	require.NotEmpty(t, snap.Drops)
	require.NotEmpty(t, snap.EndedSessions)
	var texts []string
	for _, e := range snap.Cancellations {
		texts = append(texts, e.SessionID, e.RequestID, e.Method, e.Name, e.Cause)
	}
	for _, e := range snap.Drops {
		texts = append(texts, e.SessionID, e.RequestID, e.Method, e.Name)
	}
	for _, e := range snap.EndedSessions {
		texts = append(texts, e.SessionID, e.Cause, e.Protocol)
	}
	for _, a := range snap.Attention {
		texts = append(texts, a.Key, a.RequestID, a.Reason)
	}
	for _, tv := range snap.Traces {
		texts = append(texts, tv.Key, tv.Detail)
	}
	for _, s := range texts {
		require.LessOrEqual(t, len(s), maxKeptBytes, "%.40q", s)
		require.True(t, utf8.ValidString(s), "%.40q", s)
	}
	// The longest id the core admits is kept whole; longer texts are cut.
	id := snap.Cancellations[0].RequestID
	assert.True(t, len(id) >= idBytes-8 && !strings.HasSuffix(id, "…"), "an admitted id is kept whole: %d B", len(id))
}

// registered reports whether srv has a tool of that name.
func registered(srv *server.Server, name string) bool {
	_, ok := srv.Tool(name)
	return ok
}
