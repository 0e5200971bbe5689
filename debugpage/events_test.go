package debugpage

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// recent keeps the last n values, newest first.
func TestRecentKeepsNewest(t *testing.T) {
	tests := []struct {
		name string
		size int
		adds int
		want []int
	}{
		{name: "empty", size: 3, adds: 0, want: []int{}},
		{name: "partly filled", size: 3, adds: 2, want: []int{1, 0}},
		{name: "full", size: 3, adds: 3, want: []int{2, 1, 0}},
		{name: "wrapped once", size: 3, adds: 4, want: []int{3, 2, 1}},
		{name: "wrapped many times", size: 3, adds: 11, want: []int{10, 9, 8}},
		{name: "size 1", size: 1, adds: 5, want: []int{4}},
		{name: "size 0 keeps one", size: 0, adds: 2, want: []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRecent[int](tt.size)
			for i := range tt.adds {
				r.add(i)
			}
			assert.Equal(t, tt.want, r.list())
		})
	}
}

// The event log remembers a client's cancellation with its cause, the
// dropped response, and the session's transport while it lives and its
// end afterwards.
func TestEventLogRecordsCancellationsAndSessions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		events := newEventLog()
		srv := server.New(events.serverOption())
		require.NoError(t, addTestTools(srv))
		client, conn := memory.NewPair()
		served := make(chan error, 1)
		go func() {
			served <- srv.Serve(mcpconv.ContextWithTransport(context.Background(), telemetry.TransportMemory), conn)
		}()
		write := func(m transport.Message) { require.NoError(t, client.Write(t.Context(), m)) }
		write(&transport.Request{
			ID: transport.Int64ID(1), Method: "initialize",
			Params: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`),
		})
		_, err := client.Read(t.Context())
		require.NoError(t, err)
		write(&transport.Request{Method: "notifications/initialized"})
		write(&transport.Request{ID: transport.StringID("nap"), Method: "tools/call", Params: json.RawMessage(`{"name":"sleep","arguments":{"ms":60000}}`)})
		time.Sleep(time.Second) // fake time: the sleep has run for a second
		synctest.Wait()

		sessions := srv.Sessions()
		require.Len(t, sessions, 1)
		assert.Equal(t, telemetry.TransportMemory, events.transportOf(sessions[0]))
		sessionID := sessions[0].ID()

		write(&transport.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":"nap","reason":"too slow"}`)})
		synctest.Wait()
		cancels, drops, ended := events.recentSnapshot()
		require.Len(t, cancels, 1)
		c := cancels[0]
		assert.Equal(t, cancelEvent{
			Time: c.Time, SessionID: sessionID, RequestID: "nap", Method: "tools/call", Name: "sleep",
			Reason: "client_cancel", Cause: "mcp: request canceled by client: too slow", RanFor: 1000, received: c.received,
		}, c)
		require.Len(t, drops, 1)
		assert.Equal(t, dropEvent{Time: drops[0].Time, SessionID: sessionID, RequestID: "nap", Method: "tools/call", Name: "sleep", Reason: "cancelled", received: c.received}, drops[0])
		assert.False(t, c.received.IsZero(), "the two events name the request's receipt")
		assert.Empty(t, ended)

		require.NoError(t, client.Close())
		require.NoError(t, <-served)
		_, _, ended = events.recentSnapshot()
		require.Len(t, ended, 1)
		e := ended[0]
		assert.Equal(t, sessionID, e.SessionID)
		assert.Equal(t, telemetry.TransportMemory, e.Transport)
		assert.Equal(t, "2025-11-25", e.Protocol)
		assert.InDelta(t, 1000.0, e.DurationMS, 1e-9)
		assert.Equal(t, "transport_close", e.Reason)
		assert.Empty(t, events.transportOf(sessions[0]), "forgotten once ended")
	})
}

// With -auth-issuer the debug page shows who opened each session, whose
// requests are in flight, and whose requests were cancelled, dropped or
// ended with their session: the principal's subject and client, escaped
// in HTML, in the JSON form too. The session here is served with a
// principal in its context, as the resource server's HTTP middleware puts
// one in each request's.
func TestDebugPageShowsPrincipal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const subject, clientID = `<img src=x onerror=alert(1)>`, `client&co`
		rec := NewRecorder()
		events := rec.events
		srv := server.New(rec.ServerOption(), server.WithMiddleware(auth.Middleware()))
		require.NoError(t, addTestTools(srv))
		page := mountPage(Handler(srv, rec, WithTraceExporter("none")))
		client, conn := memory.NewPair()
		ctx := mcpconv.ContextWithTransport(context.Background(), telemetry.TransportMemory)
		ctx = auth.ContextWithPrincipal(ctx, &auth.Principal{Subject: subject, ClientID: clientID, Issuer: "https://as.example.com", Actors: []string{"agent<b>", "gateway"}})
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ctx, conn) }()
		write := func(m transport.Message) { require.NoError(t, client.Write(t.Context(), m)) }
		write(&transport.Request{
			ID: transport.Int64ID(1), Method: "initialize",
			Params: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`),
		})
		_, err := client.Read(t.Context())
		require.NoError(t, err)
		write(&transport.Request{Method: "notifications/initialized"})
		write(&transport.Request{ID: transport.StringID("nap"), Method: "tools/call", Params: json.RawMessage(`{"name":"sleep","arguments":{"ms":60000}}`)})
		time.Sleep(time.Second)
		synctest.Wait()

		get := func(query string) string {
			w := httptest.NewRecorder()
			page.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/debug/vigil"+query, nil))
			require.Equal(t, http.StatusOK, w.Code)
			return w.Body.String()
		}
		var snap debugSnapshot
		require.NoError(t, json.Unmarshal([]byte(get("?format=json")), &snap))
		require.Len(t, snap.Sessions, 1)
		want := principalView{Subject: subject, ClientID: clientID, Actor: "agent<b> on behalf of gateway"}
		assert.Equal(t, want, snap.Sessions[0].principalView)
		require.Len(t, snap.InFlight, 1)
		assert.Equal(t, "nap", snap.InFlight[0].ID)
		assert.Equal(t, want, snap.InFlight[0].principalView)
		raw := get("?format=json")
		assert.Contains(t, raw, `"subject": "\u003cimg src=x onerror=alert(1)\u003e"`, "JSON escapes < and >")
		assert.Contains(t, raw, `"client_id": "client\u0026co"`)

		html := get("?refresh=0")
		assert.Contains(t, html, "<th>principal</th>")
		assert.Equal(t, 2, strings.Count(html, `<span class="mono">&lt;img src=x onerror=alert(1)&gt;</span>`), "the session and the request in flight:\n%s", html)
		assert.Contains(t, html, `(client <span class="mono">client&amp;co</span>)`)
		assert.Equal(t, 2, strings.Count(html, `<span class="mono">agent&lt;b&gt; on behalf of gateway</span> <span class="muted">on behalf of</span> <span class="mono">&lt;img`),
			"the actors on behalf of the subject:\n%s", html)
		assert.NotContains(t, html, "<img")
		assert.NotContains(t, html, "<b>")

		write(&transport.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":"nap","reason":"too slow"}`)})
		synctest.Wait()
		require.NoError(t, client.Close())
		require.NoError(t, <-served)
		require.NoError(t, json.Unmarshal([]byte(get("?format=json")), &snap))
		require.Len(t, snap.Cancellations, 1)
		assert.Equal(t, want, snap.Cancellations[0].principalView)
		require.Len(t, snap.Drops, 1)
		assert.Equal(t, want, snap.Drops[0].principalView)
		require.Len(t, snap.EndedSessions, 1)
		assert.Equal(t, want, snap.EndedSessions[0].principalView)
		assert.Empty(t, snap.Sessions)
		html = get("?refresh=0")
		assert.Equal(t, 2, strings.Count(html, `&lt;img src=x onerror=alert(1)&gt;`), "the cancellation (whose row tells its dropped response) and the ended session")
		assert.Contains(t, html, "response dropped: cancelled")
		assert.NotContains(t, html, "<img")
		events.mu.Lock()
		assert.Empty(t, events.principals, "forgotten once the session ended")
		events.mu.Unlock()
	})
}

// Without authorization nothing is recorded and the page shows no principal.
func TestDebugPageWithoutPrincipal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := NewRecorder()
		events := rec.events
		srv := server.New(rec.ServerOption())
		require.NoError(t, addTestTools(srv))
		page := mountPage(Handler(srv, rec, WithTraceExporter("none")))
		client, conn := memory.NewPair()
		served := make(chan error, 1)
		go func() { served <- srv.Serve(context.Background(), conn) }()
		require.NoError(t, client.Write(t.Context(), &transport.Request{
			ID: transport.Int64ID(1), Method: "initialize",
			Params: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`),
		}))
		_, err := client.Read(t.Context())
		require.NoError(t, err)
		synctest.Wait()
		w := httptest.NewRecorder()
		page.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/debug/vigil?format=json", nil))
		assert.NotContains(t, w.Body.String(), `"subject"`)
		assert.NotContains(t, w.Body.String(), `"client_id"`)
		var snap debugSnapshot
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &snap))
		require.Len(t, snap.Sessions, 1)
		assert.Zero(t, snap.Sessions[0].principalView)
		events.mu.Lock()
		assert.Empty(t, events.principals)
		events.mu.Unlock()
		require.NoError(t, client.Close())
		require.NoError(t, <-served)
	})
}
