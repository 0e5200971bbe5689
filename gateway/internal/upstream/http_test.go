package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// httpUpstream is a Vigil server behind Streamable HTTP on loopback, the
// upstream of the HTTP tests, with the headers of every request it got.
type httpUpstream struct {
	url       string
	started   chan struct{} // a call of "block" started
	cancelled chan error    // the cause that ended a call of "block"
	mu        sync.Mutex
	requests  []http.Header // the headers of each request, in order
	methods   []string      // the HTTP method of each
}

// seen returns the headers and HTTP methods of the requests so far.
func (u *httpUpstream) seen() ([]http.Header, []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]http.Header(nil), u.requests...), append([]string(nil), u.methods...)
}

// startHTTPUpstream serves tools "hello", "progress" (two steps),
// "sample" (asks the client), "block" (waits for its cancel) and "huge"
// (a 2 MiB text), in response mode mode.
func startHTTPUpstream(t *testing.T, mode streamable.ResponseMode) *httpUpstream {
	t.Helper()
	u := &httpUpstream{started: make(chan struct{}, 1), cancelled: make(chan error, 1)}
	srv := server.New()
	tool := func(name string, h server.ToolHandler) {
		require.NoError(t, srv.AddTool(server.Tool{Name: name}, h))
	}
	tool("hello", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("hello"), nil
	})
	tool("progress", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		for _, p := range []float64{1, 2} {
			if err := server.ReportProgress(ctx, p, 2, ""); err != nil {
				return nil, err
			}
		}
		return server.Text("done"), nil
	})
	tool("sample", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		res, err := server.CreateMessage(ctx, &server.CreateMessageParams{
			Messages:  []server.SamplingMessage{{Role: server.RoleUser, Content: []server.Content{&server.TextContent{Text: "q"}}}},
			MaxTokens: 10,
		})
		if err != nil {
			return nil, err
		}
		return server.Text("sampled " + res.Model), nil
	})
	tool("block", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		u.started <- struct{}{}
		<-ctx.Done()
		u.cancelled <- context.Cause(ctx)
		return nil, context.Cause(ctx)
	})
	tool("log", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		server.ClientLogger(ctx).Warn("careful")
		return server.Text("logged"), nil
	})
	tool("huge", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text(strings.Repeat("x", 2<<20)), nil
	})
	h := streamable.New(srv, streamable.WithResponseMode(mode))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.requests = append(u.requests, r.Header.Clone())
		u.methods = append(u.methods, r.Method)
		u.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	u.url = ts.URL
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
		_ = srv.Close()
	})
	return u
}

// openHTTP opens a session on u that answers sampling with model "m1".
func openHTTP(t *testing.T, u *httpUpstream, maxMessage int) *upstream.Session {
	t.Helper()
	conn := streamable.Dial(streamable.ClientConfig{
		URL:             u.url,
		Header:          http.Header{"Authorization": {"Bearer upstream-own-credential"}},
		MaxMessageBytes: maxMessage,
	})
	s, err := upstream.Open(t.Context(), conn, upstream.Config{
		Name:         "h",
		Capabilities: json.RawMessage(`{"sampling":{}}`),
		OnRequest: func(context.Context, *transport.Request) (json.RawMessage, error) {
			return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"a"},"model":"m1"}`), nil
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// callTool calls tool name and returns its first text.
func callTool(t *testing.T, s *upstream.Session, name string, progress func(json.RawMessage)) (string, error) {
	t.Helper()
	raw, err := s.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"`+name+`"}`), progressNotes(progress))
	if err != nil {
		return "", err
	}
	return text(t, raw), nil
}

// TestHTTPUpstream runs a session over Streamable HTTP in both response
// modes: calls, progress and a server-to-client request on the POST's
// stream (SSE mode), the session's id and protocol version on every
// request after initialize, the upstream's own credential on every one,
// and DELETE at Close.
func TestHTTPUpstream(t *testing.T) {
	testkit.Watchdog(t)
	for _, tc := range []struct {
		name string
		mode streamable.ResponseMode
	}{{"json", streamable.ResponseJSON}, {"sse", streamable.ResponseSSE}} {
		t.Run(tc.name, func(t *testing.T) {
			u := startHTTPUpstream(t, tc.mode)
			s := openHTTP(t, u, 0)
			got, err := callTool(t, s, "hello", nil)
			require.NoError(t, err)
			assert.Equal(t, "hello", got)
			tools, err := s.List(t.Context(), "tools/list", "tools", 100)
			require.NoError(t, err)
			assert.ElementsMatch(t, []string{"hello", "progress", "sample", "block", "huge", "log"}, names(t, tools))
			if tc.mode == streamable.ResponseSSE {
				var progress []string
				got, err = callTool(t, s, "progress", func(p json.RawMessage) {
					progress = append(progress, string(p))
				})
				require.NoError(t, err)
				assert.Equal(t, "done", got)
				assert.Len(t, progress, 2)
				got, err = callTool(t, s, "sample", nil)
				require.NoError(t, err)
				assert.Equal(t, "sampled m1", got)
				var logs []string
				raw, err := s.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"log"}`), &upstream.Notes{Log: func(p json.RawMessage) {
					logs = append(logs, string(p))
				}})
				require.NoError(t, err)
				assert.Equal(t, "logged", text(t, raw))
				require.Len(t, logs, 1, "the log on the call's stream reaches it")
				assert.Contains(t, logs[0], `"careful"`)
			}
			require.NoError(t, s.Close())

			headers, methods := u.seen()
			require.GreaterOrEqual(t, len(headers), 4)
			// Close ends the upstream's session: a DELETE after every POST (a
			// GET stream, opened concurrently, may be recorded in any order).
			del := slices.Index(methods, http.MethodDelete)
			require.GreaterOrEqual(t, del, 0, "Close ends the upstream's session")
			assert.NotContains(t, methods[del+1:], http.MethodPost, "nothing is sent after the DELETE")
			session := headers[1].Get("Mcp-Session-Id")
			require.NotEmpty(t, session, "the upstream gave a session")
			for i, h := range headers {
				assert.Equal(t, "Bearer upstream-own-credential", h.Get("Authorization"), "request %d", i)
				if i > 0 {
					assert.Equal(t, session, h.Get("Mcp-Session-Id"), "request %d", i)
				}
				if i > 1 {
					assert.Equal(t, "2025-11-25", h.Get("Mcp-Protocol-Version"), "request %d", i)
				}
			}
		})
	}
}

// TestHTTPCancel: a caller's cancel ends its call at once and reaches
// the upstream as notifications/cancelled (its handler's cause is a
// client cancel, not a closed stream), in both response modes.
func TestHTTPCancel(t *testing.T) {
	testkit.Watchdog(t)
	for _, tc := range []struct {
		name string
		mode streamable.ResponseMode
	}{{"json", streamable.ResponseJSON}, {"sse", streamable.ResponseSSE}} {
		t.Run(tc.name, func(t *testing.T) {
			u := startHTTPUpstream(t, tc.mode)
			s := openHTTP(t, u, 0)
			ctx, cancel := context.WithCancelCause(t.Context())
			cause := errors.New("downstream cancel")
			done := make(chan error, 1)
			go func() {
				_, err := s.Call(ctx, "tools/call", json.RawMessage(`{"name":"block"}`), nil)
				done <- err
			}()
			<-u.started
			cancel(cause)
			require.ErrorIs(t, <-done, cause)
			upCause := <-u.cancelled
			assert.Equal(t, protocol.ReasonClientCancel, server.ReasonOfCause(upCause), "the upstream got notifications/cancelled before its stream closed: %v", upCause)
			got, err := callTool(t, s, "hello", nil)
			require.NoError(t, err)
			assert.Equal(t, "hello", got)
		})
	}
}

// TestHTTPHugeAnswer: an answer over MaxMessageBytes, a JSON body or an
// SSE event, fails only its call, with a TooLargeError naming the bound,
// without being read whole; the session lives on and counts it.
func TestHTTPHugeAnswer(t *testing.T) {
	testkit.Watchdog(t)
	for _, tc := range []struct {
		name string
		mode streamable.ResponseMode
	}{{"json", streamable.ResponseJSON}, {"sse", streamable.ResponseSSE}} {
		t.Run(tc.name, func(t *testing.T) {
			u := startHTTPUpstream(t, tc.mode)
			s := openHTTP(t, u, 64<<10)
			_, err := callTool(t, s, "huge", nil)
			tooLarge, ok := errors.AsType[*upstream.TooLargeError](err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, 64<<10, tooLarge.Max)
			require.NoError(t, s.Err(), "the session lives on")
			got, err := callTool(t, s, "hello", nil)
			require.NoError(t, err)
			assert.Equal(t, "hello", got)
			assert.Equal(t, int64(1), s.Stats().OversizeMessages)
		})
	}
}

// TestHTTPUnreachable: an upstream that cannot be reached fails Open.
func TestHTTPUnreachable(t *testing.T) {
	testkit.Watchdog(t)
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL
	ts.Close()
	_, err := upstream.Open(t.Context(), streamable.Dial(streamable.ClientConfig{URL: url}), upstream.Config{Name: "h"})
	require.ErrorIs(t, err, upstream.ErrGone)
}

// TestHTTPUpstreamRequestOfItsCall: a request of the upstream that
// arrives on a call's POST stream gets that call's context, with two
// calls in flight at once.
func TestHTTPUpstreamRequestOfItsCall(t *testing.T) {
	testkit.Watchdog(t)
	u := startHTTPUpstream(t, streamable.ResponseSSE)
	both := make(chan struct{})
	var arrived sync.WaitGroup
	arrived.Add(2)
	go func() { arrived.Wait(); close(both) }()
	conn := streamable.Dial(streamable.ClientConfig{URL: u.url})
	s, err := upstream.Open(t.Context(), conn, upstream.Config{
		Name:         "h",
		Capabilities: json.RawMessage(`{"sampling":{}}`),
		OnRequest: func(ctx context.Context, _ *transport.Request) (json.RawMessage, error) {
			arrived.Done()
			<-both // both calls are waiting for their sampling
			model, _ := ctx.Value(whoKey{}).(string)
			return json.Marshal(map[string]any{"role": "assistant", "content": map[string]string{"type": "text", "text": "a"}, "model": model})
		},
	})
	require.NoError(t, err)
	defer func() { _ = s.Close() }()
	type answer struct {
		who string
		raw json.RawMessage
		err error
	}
	results := make(chan answer, 2)
	for _, who := range []string{"one", "two"} {
		go func() {
			raw, err := s.Call(context.WithValue(t.Context(), whoKey{}, who), "tools/call", json.RawMessage(`{"name":"sample"}`), nil)
			results <- answer{who, raw, err}
		}()
	}
	var got []string
	for range 2 {
		a := <-results
		require.NoError(t, a.err)
		got = append(got, a.who+": "+text(t, a.raw))
	}
	assert.ElementsMatch(t, []string{"one: sampled one", "two: sampled two"}, got)
}

// whoKey carries, in a caller's context, whom the test's Credentials
// get a token for.
type whoKey struct{}

// TestHTTPCredentials: each request carries the headers Credentials
// returns for the context of whoever sends it (the caller's for a call,
// the connection's own otherwise); when it fails, that call alone fails,
// with its text, nothing is sent, and the session serves on.
func TestHTTPCredentials(t *testing.T) {
	testkit.Watchdog(t)
	u := startHTTPUpstream(t, streamable.ResponseJSON)
	conn := streamable.Dial(streamable.ClientConfig{
		URL:  u.url,
		Name: "upstream", // as the gateway names it
		Credentials: func(ctx context.Context) (http.Header, error) {
			who, _ := ctx.Value(whoKey{}).(string)
			switch who {
			case "":
				return http.Header{"Authorization": {"Bearer gateway-own"}}, nil
			case "mallory":
				return nil, errors.New("no token for mallory")
			}
			return http.Header{"authorization": {"Bearer for-" + who}}, nil
		},
	})
	s, err := upstream.Open(t.Context(), conn, upstream.Config{Name: "h"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, before := u.seen()

	alice := context.WithValue(t.Context(), whoKey{}, "alice")
	_, err = s.Call(alice, "tools/call", json.RawMessage(`{"name":"hello"}`), nil)
	require.NoError(t, err)
	_, err = s.Call(context.WithValue(t.Context(), whoKey{}, "mallory"), "tools/call", json.RawMessage(`{"name":"hello"}`), nil)
	var rpc *transport.Error
	require.ErrorAs(t, err, &rpc)
	assert.Equal(t, "the upstream's credentials: no token for mallory", rpc.Message)
	_, err = s.Call(alice, "tools/call", json.RawMessage(`{"name":"hello"}`), nil)
	require.NoError(t, err, "the session serves on")

	headers, methods := u.seen()
	var auth []string
	for i, h := range headers {
		if methods[i] == http.MethodPost {
			auth = append(auth, h.Get("Authorization"))
		}
	}
	posts := 0 // before the calls (a GET stream may be recorded among them)
	for _, m := range before {
		if m == http.MethodPost {
			posts++
		}
	}
	require.GreaterOrEqual(t, len(auth), 2+posts)
	assert.Equal(t, []string{"Bearer gateway-own", "Bearer gateway-own"}, auth[:2], "initialize and initialized: the gateway's own")
	assert.Equal(t, []string{"Bearer for-alice", "Bearer for-alice"}, auth[len(auth)-2:], "the calls: the caller's, and mallory's sent nothing")
}
