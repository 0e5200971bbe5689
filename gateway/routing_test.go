package gateway_test

import (
	"encoding/json"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/internal/testkit/routingtest"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The routing repro of issue 67: caller A calls a stdio upstream, whose
// messages name no call, and cancels; caller B calls next. The upstream
// ignores the cancel and goes on with A's call: it logs about it and asks
// A's question. None of that may reach B, and B's answer must never go
// upstream as A's. Before the fix, B got A's log line and question, and
// B's decline was taken upstream as A's answer.

// routingEnv makes the test binary the upstream of the repro
// (routingtest.Upstream).
const routingEnv = "GATEWAY_TEST_ROUTING"

// The texts of A's and B's calls.
const (
	secretA = "A-SECRET-4711"
	ownB    = "B-OWN-0815"
)

// upstreamSaid collects the repro upstream's stderr lines, which the
// gateway logs (Config.Logger), for a test to wait for.
type upstreamSaid struct {
	mu    sync.Mutex
	lines []string
	grew  chan struct{} // closed, and made again, when a line comes
}

func newUpstreamSaid() *upstreamSaid { return &upstreamSaid{grew: make(chan struct{})} }

func (u *upstreamSaid) Write(p []byte) (int, error) {
	var r struct {
		Msg  string `json:"msg"`
		Line string `json:"line"`
	}
	if json.Unmarshal(p, &r) == nil && r.Msg == "upstream stderr" {
		u.mu.Lock()
		u.lines = append(u.lines, r.Line)
		close(u.grew)
		u.grew = make(chan struct{})
		u.mu.Unlock()
	}
	return len(p), nil
}

// find returns the first line that starts with one of prefixes, or "",
// and a channel closed when the next line comes.
func (u *upstreamSaid) find(prefixes ...string) (string, <-chan struct{}) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, l := range u.lines {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				return l, nil
			}
		}
	}
	return "", u.grew
}

// await waits for a line that starts with one of prefixes.
func (u *upstreamSaid) await(t testing.TB, prefixes ...string) string {
	t.Helper()
	for {
		l, grew := u.find(prefixes...)
		if l != "" {
			return l
		}
		select {
		case <-grew:
		case <-t.Context().Done():
			t.Fatalf("the upstream never said %q", prefixes)
		}
	}
}

// all returns every line so far.
func (u *upstreamSaid) all() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.lines...)
}

// routingVariant is one way callers share an upstream session.
type routingVariant struct {
	shared    bool // -upstream-shared, 2025 sessions; else stateless 2026-07-28 callers
	principal bool // callers keyed by principal (WithCallerKey: alice, bob), as with authorization
}

// routingRepro drives the repro through a gateway and checks that B got
// nothing of A's and that its answer went to its own question only.
func routingRepro(t *testing.T, v routingVariant) {
	testkit.Watchdog(t)
	version := protocol.Version20260728 // stateless callers' calls carry it
	if v.shared {
		version = "" // 2025 sessions
	}
	said := newUpstreamSaid()
	var opts []server.Option
	var keyed chan struct{} // bob's key was asked: his call is about to wait its turn
	if v.principal {
		keyed = make(chan struct{}, 1)
		opts = append(opts, server.WithCallerKey(func(req *server.Request) string {
			if req.ClientInfo.Name == "bob" {
				select {
				case keyed <- struct{}{}:
				default:
				}
			}
			return req.ClientInfo.Name
		}))
	}
	srv := server.New(opts...)
	g, err := gateway.Mount(t.Context(), srv, gateway.Config{
		Upstreams: []gateway.Upstream{{Name: "r", Command: []string{os.Args[0], "-test.run=^$"}, Env: []string{routingEnv + "=1", "GORACE=atexit_sleep_ms=0"}, Shared: v.shared}},
		Logger:    slog.New(slog.NewJSONHandler(said, nil)),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = g.Close(), srv.Close() })

	// A calls; the upstream works on it, and A hears so: logs reach a
	// lone call's caller. A cancels; the upstream hears it, and goes on.
	a := routingCaller(t, srv, "alice", v.shared)
	a.Request(1, "tools/call", routingtest.Params(version, "alice", secretA, true))
	pid, err := testkit.HostPID(strings.Fields(said.await(t, "call "+secretA+" "))[2])
	require.NoError(t, err)
	n := a.RecvRequest()
	require.Equal(t, "notifications/message", n.Method)
	require.Contains(t, string(n.Params), "working on "+secretA)
	a.Cancel(1, "enough")
	said.await(t, "cancelled ")

	// B calls. Its arrival makes the upstream ask A's question. When B's
	// call waits its turn instead (another principal's call is in
	// flight), the upstream is told to ask: the gateway asks B's key just
	// before that wait. (Before the fix, only the server asked it, once
	// B's call had reached the upstream, which had asked already.)
	b := routingCaller(t, srv, "bob", v.shared)
	b.Request(10, "tools/call", routingtest.Params(version, "bob", ownB, false))
	for waiting := keyed != nil; waiting; {
		l, arrived := said.find("call " + ownB + " ")
		if l != "" {
			break
		}
		select {
		case <-arrived:
		case <-keyed:
			t.Log("B's call waits its turn: the upstream is told to ask")
			require.NoError(t, syscall.Kill(pid, syscall.SIGUSR1))
			waiting = false
		}
	}
	heard, result, err := routingtest.Listen(jsonCaller{b}, 10, version, "bob", ownB)
	require.NoError(t, err)

	t.Logf("B heard: %q", heard)
	assert.Equal(t, ownB+": decline", result, "B's call completes with its own answer")
	for _, h := range heard {
		assert.NotContains(t, h, secretA, "B was told of A's call")
	}
	assert.Contains(t, strings.Join(heard, "\n"), "please confirm: "+ownB, "B's own question reached B")
	if v.shared {
		assert.Contains(t, strings.Join(heard, "\n"), "working on "+ownB, "B's own log line reached B")
	}
	fate := said.await(t, "answer "+secretA+" ", "refused "+secretA+" ")
	assert.True(t, strings.HasPrefix(fate, "refused "), "A's question went unanswered, not answered by B: %q", fate)
	said.await(t, "answer "+ownB+" ")
	lines := said.all()
	assert.Contains(t, lines, "answer "+ownB+" decline", "B's answer went to B's question")
	if v.principal { // one principal at a time: B's call went upstream once A's had ended
		assert.Less(t, slices.IndexFunc(lines, func(l string) bool { return l == fate }),
			slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "call "+ownB+" ") }), "%q", lines)
	}
}

// routingCaller connects a caller named who: a 2025 session that declares
// elicitation and asks for every log level, or a pipe for stateless
// 2026-07-28 requests.
func routingCaller(t *testing.T, srv *server.Server, who string, session bool) *mcptest.Client {
	t.Helper()
	if !session {
		return mcptest.Pipe(t, srv)
	}
	c := mcptest.Connect(t, srv, mcptest.WithClientInfo(who, "1"), mcptest.WithCapabilities(map[string]any{"elicitation": map[string]any{}}))
	_, rpcErr := c.Call("logging/setLevel", map[string]any{"level": "debug"})
	require.Nil(t, rpcErr)
	return c
}

// TestRoutingAfterCancelShared: -upstream-shared, callers without a
// principal: B gets nothing of A's cancelled call, and its own call
// completes (issue 67, routing, variant 1).
func TestRoutingAfterCancelShared(t *testing.T) {
	routingRepro(t, routingVariant{shared: true})
}

// TestRoutingAfterCancelSharedPrincipals: -upstream-shared, alice and
// bob: B's call waits for A's to end upstream, gets nothing of it, and
// completes (variant 3 on 1).
func TestRoutingAfterCancelSharedPrincipals(t *testing.T) {
	routingRepro(t, routingVariant{shared: true, principal: true})
}

// TestRoutingAfterCancelStateless: 2026-07-28 stateless callers in front
// of a 2025 upstream share its listing session by default: B gets
// nothing of A's, its rounds are its own (variant 2).
func TestRoutingAfterCancelStateless(t *testing.T) {
	routingRepro(t, routingVariant{})
}

// TestRoutingAfterCancelStatelessPrincipals: the same, alice and bob
// (variant 3 on 2).
func TestRoutingAfterCancelStatelessPrincipals(t *testing.T) {
	routingRepro(t, routingVariant{principal: true})
}

// jsonCaller is an mcptest client as routingtest.Listen reads and answers.
type jsonCaller struct{ *mcptest.Client }

func (c jsonCaller) Next() []byte { b, _ := transport.AppendMessage(nil, c.Recv()); return b }

func (c jsonCaller) Answer(msg []byte) { m, _ := transport.DecodeMessage(msg); c.Send(m) }
