package upstream_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// blockingUpstream serves "block", which logs (so that its SSE stream is
// open), tells started and waits for its end; the streams' events have
// ids when resumable. gets hears of each GET, when it has room.
func blockingUpstream(t *testing.T, resumable bool) (ts *httptest.Server, started, gets chan struct{}) {
	t.Helper()
	started, gets = make(chan struct{}, 1), make(chan struct{}, 8)
	srv := server.New()
	require.NoError(t, srv.AddTool(server.Tool{Name: "block"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		server.ClientLogger(ctx).Warn("holding")
		started <- struct{}{}
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}))
	opts := []streamable.Option{streamable.WithResponseMode(streamable.ResponseSSE)}
	if resumable {
		opts = append(opts, streamable.WithEventStore(streamable.NewMemoryEventStore(0, 0)))
	}
	h := streamable.New(srv, opts...)
	ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			select {
			case gets <- struct{}{}:
			default:
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
		_ = srv.Close()
	})
	return ts, started, gets
}

// kill makes ts as an upstream whose process was killed: nothing listens
// any more, and its connections are cut.
func kill(ts *httptest.Server) {
	_ = ts.Listener.Close()
	ts.CloseClientConnections()
}

// blockedCall opens a session on ts and calls its blocking tool, once it
// started (started) and its stream is open (its log line came); done gets
// the call's error.
func blockedCall(t *testing.T, ts *httptest.Server, started <-chan struct{}) (*upstream.Session, <-chan error) {
	t.Helper()
	s, err := upstream.Open(t.Context(), streamable.Dial(streamable.ClientConfig{URL: ts.URL, Name: "upstream"}), upstream.Config{Name: "h"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	done := make(chan error, 1)
	logged := make(chan struct{}, 1)
	go func() {
		_, err := s.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"block"}`), &upstream.Notes{Log: func(json.RawMessage) { logged <- struct{}{} }})
		done <- err
	}()
	<-started
	<-logged // its stream is open
	return s, done
}

// TestHTTPKilledMidCall: an HTTP upstream killed while a call's stream is
// open ends the session at once with ErrGone, as a stdio upstream whose
// process exits does, whether or not its stream could have been resumed
// (which would first wait a second, then fail to reach it).
func TestHTTPKilledMidCall(t *testing.T) {
	testkit.Watchdog(t)
	for _, tc := range []struct {
		name      string
		resumable bool
	}{{"plain", false}, {"resumable", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ts, started, _ := blockingUpstream(t, tc.resumable)
			s, done := blockedCall(t, ts, started)
			kill(ts)
			err := <-done
			require.ErrorIs(t, err, upstream.ErrGone)
			var rpc *transport.Error
			assert.NotErrorAs(t, err, &rpc, "not an answer of the upstream's")
			<-s.Done()
			require.ErrorIs(t, s.Err(), upstream.ErrGone)
		})
	}
}

// TestHTTPCutStreamOfALiveUpstream: a call whose stream is cut while the
// upstream still answers fails alone, with an error answer that names
// neither the upstream's URL nor its address; the session serves on.
func TestHTTPCutStreamOfALiveUpstream(t *testing.T) {
	testkit.Watchdog(t)
	ts, started, _ := blockingUpstream(t, false)
	s, done := blockedCall(t, ts, started)
	ts.CloseClientConnections()
	err := <-done
	var rpc *transport.Error
	require.ErrorAs(t, err, &rpc)
	assert.Equal(t, "the upstream's answer was cut off: the connection to the upstream broke", rpc.Message)
	assert.NotContains(t, rpc.Message, ts.Listener.Addr().String())
	_, err = s.Call(t.Context(), "ping", nil, nil)
	require.NoError(t, err, "the session serves on")
}

// TestHTTPUnreachableGetEndsTheSession: the session's GET stream, cut
// and unable to reach its upstream again, ends the session with ErrGone
// (a session that serves no call learns that its upstream went).
func TestHTTPUnreachableGetEndsTheSession(t *testing.T) {
	testkit.Watchdog(t)
	ts, _, gets := blockingUpstream(t, false)
	s, err := upstream.Open(t.Context(), streamable.Dial(streamable.ClientConfig{URL: ts.URL}), upstream.Config{Name: "h"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	<-gets // the GET stream is open
	kill(ts)
	<-s.Done()
	require.ErrorIs(t, s.Err(), upstream.ErrGone)
}
