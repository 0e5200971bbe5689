package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// watchedEnv makes the test binary a stdio upstream with a watched
// resource (runWatched).
const watchedEnv = "GATEWAY_TEST_WATCHED"

// watchedURI is runWatched's resource.
const watchedURI = "file:///watched"

// runWatched serves, over stdio, the resource watchedURI and the tools
// "touch" (its subscribers, of this process, are told it was updated) and
// "subscribed" (the URIs the calling session subscribed to, on this
// process).
func runWatched() int {
	srv := server.New()
	_ = srv.AddResource(server.Resource{URI: watchedURI, Name: "watched"}, func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
		return &server.ReadResourceResult{Contents: []*server.ResourceContents{{URI: watchedURI, Text: "watched"}}}, nil
	})
	_ = srv.AddTool(server.Tool{Name: "touch"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		srv.ResourceUpdated(watchedURI)
		return server.Text("touched"), nil
	})
	_ = srv.AddTool(server.Tool{Name: "subscribed"}, func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text(strings.Join(req.Request.Session.Subscriptions(), ",")), nil
	})
	if err := srv.Serve(context.Background(), stdio.Std()); err != nil {
		return 1
	}
	return 0
}

// watchedUpstream is the test binary as runWatched, the stdio upstream
// "w": a process per downstream session.
func watchedUpstream() gateway.Upstream {
	return gateway.Upstream{Name: "w", Command: []string{os.Args[0], "-test.run=^$"}, Env: []string{watchedEnv + "=1"}}
}

// updatesIn counts the notifications/resources/updated of uri among msgs.
func updatesIn(msgs []transport.Message, uri string) int {
	n := 0
	for _, m := range msgs {
		if r, ok := m.(*transport.Request); ok && r.Method == "notifications/resources/updated" && strings.Contains(string(r.Params), uri) {
			n++
		}
	}
	return n
}

// recvUpdate reads c until a notifications/resources/updated of uri, and
// returns what it read before it.
func recvUpdate(t *testing.T, c *mcptest.Client, uri string) []transport.Message {
	t.Helper()
	var before []transport.Message
	for {
		m := c.Recv()
		if updatesIn([]transport.Message{m}, uri) == 1 {
			return before
		}
		before = append(before, m)
	}
}

// TestSubscriptionsPerCallerStdio: over a stdio upstream, a process per
// session, each session's resources/subscribe and resources/unsubscribe
// are forwarded to its own process, and an update its process tells
// reaches it alone: B, subscribed to the same URI, never hears of A's.
func TestSubscriptionsPerCallerStdio(t *testing.T) {
	testkit.Watchdog(t)
	srv := frontServer(t, watchedUpstream())
	a, b := mcptest.Connect(t, srv), mcptest.Connect(t, srv)
	for _, c := range []*mcptest.Client{a, b} {
		_, rpcErr := c.Call("resources/subscribe", map[string]string{"uri": watchedURI})
		require.Nil(t, rpcErr)
		assert.Equal(t, watchedURI, c.CallTool("subscribed", nil).Text(), "subscribed on its own process")
	}

	assert.Equal(t, "touched", a.CallTool("touch", nil).Text())
	recvUpdate(t, a, watchedURI)
	assert.Equal(t, "touched", b.CallTool("touch", nil).Text())
	assert.Empty(t, updatesIn(recvUpdate(t, b, watchedURI), watchedURI), "B heard of A's update")

	_, rpcErr := a.Call("resources/unsubscribe", map[string]string{"uri": watchedURI})
	require.Nil(t, rpcErr)
	assert.Empty(t, a.CallTool("subscribed", nil).Text(), "unsubscribed on its own process")
	assert.Equal(t, watchedURI, b.CallTool("subscribed", nil).Text(), "B's subscription stays")
}

// listen2026 opens a subscriptions/listen (id 1) of a 2026-07-28 caller
// on c naming uri, and waits for its acknowledgement.
func listen2026(t *testing.T, c *mcptest.Client, uri string) {
	t.Helper()
	c.Request(1, "subscriptions/listen", map[string]any{
		"notifications": map[string]any{"resourceSubscriptions": []string{uri}},
		"_meta":         meta2026(map[string]any{}),
	})
	ack := c.RecvRequest()
	require.Equal(t, "notifications/subscriptions/acknowledged", ack.Method)
	assert.Contains(t, string(ack.Params), uri)
}

// TestListenFollowedStdio: a 2026-07-28 caller's subscriptions/listen
// naming a resource hears of its update by a 2026-07-28 call, on the
// upstream's process of such callers; a 2025 session subscribed to the
// same URI, on a process of its own, does not.
func TestListenFollowedStdio(t *testing.T) {
	testkit.Watchdog(t)
	srv := frontServer(t, watchedUpstream())
	session := mcptest.Connect(t, srv)
	_, rpcErr := session.Call("resources/subscribe", map[string]string{"uri": watchedURI})
	require.Nil(t, rpcErr)

	listener := mcptest.Pipe(t, srv)
	listen2026(t, listener, watchedURI)
	caller := mcptest.Pipe(t, srv)
	caller.Request(2, "tools/call", map[string]any{"name": "touch", "_meta": meta2026(map[string]any{})})
	assert.Contains(t, string(caller.RecvResult(2)), "touched")
	n := listener.RecvRequest()
	assert.Equal(t, "notifications/resources/updated", n.Method)
	assert.Contains(t, string(n.Params), watchedURI)
	assert.Contains(t, string(n.Params), "subscriptionId", "on the listen stream")

	assert.Equal(t, "touched", session.CallTool("touch", nil).Text())
	assert.Empty(t, updatesIn(recvUpdate(t, session, watchedURI), watchedURI), "the session heard of the 2026-07-28 process's update")
}

// TestListenFollowedHTTP: a 2026-07-28 caller's subscriptions/listen
// naming a resource of an HTTP upstream hears of its updates: followed
// with a listen stream of the gateway's on an upstream of 2026-07-28, by
// resources/subscribe on one of the 2025 era only.
func TestListenFollowedHTTP(t *testing.T) {
	for _, era := range []string{"2026-07-28", "2025"} {
		t.Run(era, func(t *testing.T) {
			testkit.Watchdog(t)
			u := startUpstream(t, "a")
			u.only2025.Store(era == "2025")
			srv := frontServer(t, gateway.Upstream{Name: "a", URL: u.url})
			c := mcptest.Pipe(t, srv)
			listen2026(t, c, "file:///a/readme")
			subscribersListening(u) // the 2025 era's: the listing session subscribed
			u.srv.ResourceUpdated("file:///a/readme")
			n := c.RecvRequest()
			assert.Equal(t, "notifications/resources/updated", n.Method)
			var p struct {
				URI  string         `json:"uri"`
				Meta map[string]any `json:"_meta"`
			}
			require.NoError(t, json.Unmarshal(n.Params, &p))
			assert.Equal(t, "file:///a/readme", p.URI)
			assert.NotEmpty(t, p.Meta, "tagged with its subscription")
		})
	}
}

// TestUnsubscribeForwardedHTTP: a session's resources/unsubscribe reaches
// its upstream session, which then holds no subscription; another
// session, which never subscribed, hears of no update.
func TestUnsubscribeForwardedHTTP(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	srv := frontServer(t, gateway.Upstream{Name: "a", URL: u.url})
	a, b := mcptest.Connect(t, srv), mcptest.Connect(t, srv)
	assert.Equal(t, "hello from a", b.CallTool("hello", nil).Text()) // B's upstream session
	_, rpcErr := a.Call("resources/subscribe", map[string]string{"uri": "file:///a/readme"})
	require.Nil(t, rpcErr)
	assert.Equal(t, []string{"file:///a/readme"}, upstreamSubscriptions(u))

	subscribersListening(u)
	u.srv.ResourceUpdated("file:///a/readme")
	recvUpdate(t, a, "file:///a/readme")
	_, rpcErr = a.Call("resources/unsubscribe", map[string]string{"uri": "file:///a/readme"})
	require.Nil(t, rpcErr)
	assert.Empty(t, upstreamSubscriptions(u), "the unsubscribe reached the upstream")
	assert.Empty(t, updatesIn(unread(t, b), "file:///a/readme"), "B heard of A's update")
}

// upstreamSubscriptions returns the URIs the upstream's sessions
// subscribed to.
func upstreamSubscriptions(u *fakeUpstream) []string {
	var uris []string
	for _, ss := range u.srv.Sessions() {
		uris = append(uris, ss.Subscriptions()...)
	}
	return uris
}

// unread returns what c has received and not read yet, up to the answer
// to a ping sent now.
func unread(t *testing.T, c *mcptest.Client) []transport.Message {
	t.Helper()
	c.Request(99, "ping", nil)
	var kept []transport.Message
	for {
		m := c.Recv()
		if r, ok := m.(*transport.Response); ok && r.ID == transport.Int64ID(99) {
			return kept
		}
		kept = append(kept, m)
	}
}

// getStreams are the upstream sessions whose GET stream is open: what the
// upstream sends outside a call reaches them from then on.
type getStreams struct {
	mu   sync.Mutex
	open map[string]bool
	news chan struct{} // closed at the next opening
}

// opened notes that session id's GET stream is open.
func (g *getStreams) opened(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open == nil {
		g.open = map[string]bool{}
	}
	g.open[id] = true
	if g.news != nil {
		close(g.news)
		g.news = nil
	}
}

// await waits until session id's GET stream is open.
func (g *getStreams) await(id string) {
	for {
		g.mu.Lock()
		if g.open[id] {
			g.mu.Unlock()
			return
		}
		if g.news == nil {
			g.news = make(chan struct{})
		}
		news := g.news
		g.mu.Unlock()
		<-news
	}
}

// getWatch is the ResponseWriter of a GET stream: open is called when its
// headers are written, once the upstream holds the stream.
type getWatch struct {
	http.ResponseWriter
	open func()
	once sync.Once
}

func (w *getWatch) WriteHeader(code int) {
	if code == http.StatusOK {
		w.once.Do(w.open)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *getWatch) Write(b []byte) (int, error) {
	w.once.Do(w.open)
	return w.ResponseWriter.Write(b)
}

func (w *getWatch) Flush() { http.NewResponseController(w.ResponseWriter).Flush() } //nolint:errcheck // as http.Flusher

func (w *getWatch) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// subscribersListening waits until each upstream session that holds a
// subscription has its GET stream open, on which its updates come.
func subscribersListening(u *fakeUpstream) {
	for _, ss := range u.srv.Sessions() {
		if len(ss.Subscriptions()) > 0 {
			u.gets.await(ss.ID())
		}
	}
}
