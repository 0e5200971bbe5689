package upstream_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// resumable is a Vigil server whose streams are resumable (an event
// store, a retry field of 1 ms), with the GETs it got.
type resumable struct {
	srv  *server.Server
	ts   *httptest.Server
	gets chan http.Header // each GET's headers, as it arrives
}

// startResumable serves "poll": it reports progress 1, ends the HTTP
// response of its stream (polling), reports progress 2 and answers
// "resumed".
func startResumable(t *testing.T) *resumable {
	t.Helper()
	u := &resumable{srv: server.New(), gets: make(chan http.Header, 16)}
	require.NoError(t, u.srv.AddTool(server.Tool{Name: "poll"}, func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		if err := server.ReportProgress(ctx, 1, 2, ""); err != nil {
			return nil, err
		}
		if err := streamable.CloseSSEStream(ctx, req.Request.ID); err != nil {
			return nil, err
		}
		if err := server.ReportProgress(ctx, 2, 2, ""); err != nil {
			return nil, err
		}
		return server.Text("resumed"), nil
	}))
	h := streamable.New(u.srv, streamable.WithResponseMode(streamable.ResponseSSE),
		streamable.WithEventStore(streamable.NewMemoryEventStore(0, 0)), streamable.WithRetryInterval(time.Millisecond))
	u.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			select {
			case u.gets <- r.Header.Clone():
			default:
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		_ = h.Close()
		u.ts.Close()
		_ = u.srv.Close()
	})
	return u
}

// TestHTTPResumesACutCall: a call whose POST stream the upstream ends
// before the answer is resumed with a GET carrying Last-Event-ID, and gets
// its later progress and its answer; its Notes.Polled hears of the cut.
func TestHTTPResumesACutCall(t *testing.T) {
	testkit.Watchdog(t)
	u := startResumable(t)
	s, err := upstream.Open(t.Context(), streamable.Dial(streamable.ClientConfig{URL: u.ts.URL}), upstream.Config{Name: "r"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	var mu sync.Mutex
	var progress []string
	polled := make(chan struct{}, 4)
	res, err := s.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"poll"}`), &upstream.Notes{Progress: func(p json.RawMessage) {
		mu.Lock()
		defer mu.Unlock()
		var v struct{ Progress float64 }
		_ = json.Unmarshal(p, &v)
		progress = append(progress, string(rune('0'+int(v.Progress))))
	}, Polled: func() { polled <- struct{}{} }})
	require.NoError(t, err)
	assert.Contains(t, string(res), "resumed")
	assert.Equal(t, []string{"1", "2"}, progress, "the progress sent while the stream was cut, replayed")
	assert.Len(t, polled, 1, "Polled told of the one cut")
	resumed := false
	for len(u.gets) > 0 {
		if (<-u.gets).Get("Last-Event-ID") != "" {
			resumed = true
		}
	}
	assert.True(t, resumed, "a GET resumed the stream")
}

// TestHTTPGetStreamReconnects: the GET stream, cut, is opened again with
// Last-Event-ID, and the upstream's notification sent after the cut
// arrives.
func TestHTTPGetStreamReconnects(t *testing.T) {
	testkit.Watchdog(t)
	u := startResumable(t)
	notes := make(chan string, 16)
	s, err := upstream.Open(t.Context(), streamable.Dial(streamable.ClientConfig{URL: u.ts.URL}), upstream.Config{
		Name:           "r",
		OnNotification: func(n *transport.Request) { notes <- n.Method },
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	<-u.gets // the GET stream is open
	tool := func(name string) {
		require.NoError(t, u.srv.AddTool(server.Tool{Name: name}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text(name), nil
		}))
	}
	tool("one")
	assert.Equal(t, "notifications/tools/list_changed", <-notes)

	u.ts.CloseClientConnections()
	again := <-u.gets
	assert.NotEmpty(t, again.Get("Last-Event-ID"), "resumed after the last event")
	tool("two")
	assert.Equal(t, "notifications/tools/list_changed", <-notes, "sent after the cut, received")
}
