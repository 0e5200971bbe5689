package oauth_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/internal/streamabletest"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/middleware/oauth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// newScopedReplicas serves one server per replica behind the guard, each
// with opts and, for a shared test, the cluster replica made by cluster
// (nil: a single replica, unshared). Its tokens are one principal's:
// "full" holds mcp and deploy, "less" only mcp (the same key, so that a
// session accepts both).
func newScopedReplicas(t *testing.T, n int, cluster func(name string) replication.Cluster, opts ...streamable.Option) []*e2e {
	t.Helper()
	full := &auth.Principal{Issuer: "https://as.example.com", Subject: "alice", ClientID: "c", Scopes: []string{"mcp", "deploy"}}
	less := &auth.Principal{Issuer: "https://as.example.com", Subject: "alice", ClientID: "c", Scopes: []string{"mcp"}}
	require.Equal(t, full.Key(), less.Key())
	var out []*e2e
	for i := range n {
		srv := server.New(server.WithListChangedDelay(0), server.WithMiddleware(auth.Middleware()),
			server.WithToolAccess(auth.ToolAccess), server.WithCallerKey(auth.CallerKey))
		scopes := func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			p, ok := auth.PrincipalFromContext(ctx)
			if !ok {
				return server.Text("nobody"), nil
			}
			return server.Text(strings.Join(p.Scopes, " ")), nil
		}
		require.NoError(t, srv.AddTool(server.Tool{Name: "scopes"}, scopes))
		require.NoError(t, srv.AddTool(server.Tool{Name: "deploy", Scopes: []string{"deploy"}}, scopes))
		rs, err := oauth.New(oauth.Config{
			Resource:             "http://127.0.0.1/mcp",
			AuthorizationServers: []string{"https://as.example.com"},
			Verifier:             &fakeVerifier{principals: map[string]*auth.Principal{"full": full, "less": less}},
			Scopes:               []string{"mcp"},
			Tools:                srv,
		})
		require.NoError(t, err)
		o := append([]streamable.Option{streamable.WithPrincipal(auth.SessionPrincipal)}, opts...)
		if cluster != nil {
			o = append(o, streamable.WithCluster(replication.Config{Cluster: cluster(string(rune('a' + i)))}))
		}
		ep, guarded := rs.Endpoint(srv, o...)
		ts := httptest.NewServer(guarded)
		t.Cleanup(func() {
			_ = ep.Close()
			ts.CloseClientConnections()
			ts.Close()
			_ = srv.Close()
		})
		out = append(out, &e2e{t: t, url: ts.URL})
	}
	return out
}

// scopedIDs numbers checkScoped's requests: unique in a session, where a
// resumable stream outlives its answer.
var scopedIDs atomic.Int64

// checkScoped checks what a request of session sid (stateless when "")
// with token sees: deploy listed and callable, and the scopes the handler
// reads, only with token "full".
func checkScoped(t *testing.T, e *e2e, sid, token string) {
	t.Helper()
	want := token == "full"
	post := func(method, params, name string) e2eReply {
		id := strconv.FormatInt(scopedIDs.Add(1), 10)
		hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": protocol.Version20251125}
		if sid == "" {
			hdr = map[string]string{"MCP-Protocol-Version": protocol.Version20260728, "Mcp-Method": method}
			if name != "" {
				hdr["Mcp-Name"] = name
			}
			meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"e2e","version":"1"}}}`
			if params == `{}` {
				params = `{` + meta
			} else {
				params = params[:len(params)-1] + `,` + meta
			}
		}
		return e.post(token, `{"jsonrpc":"2.0","id":`+id+`,"method":"`+method+`","params":`+params+`}`, hdr)
	}
	list := post("tools/list", `{}`, "")
	require.Equal(t, http.StatusOK, list.status)
	require.Nil(t, list.msg.Error)
	if want {
		assert.Equal(t, []string{"deploy", "scopes"}, toolNames(t, list.msg.Result))
	} else {
		assert.Equal(t, []string{"scopes"}, toolNames(t, list.msg.Result), "tools/list with token %s", token)
	}
	call := post("tools/call", `{"name":"deploy","arguments":{}}`, "deploy")
	if want {
		require.Equal(t, http.StatusOK, call.status)
		require.Nil(t, call.msg.Error)
		assert.Equal(t, "mcp deploy", callText(t, call.msg.Result))
	} else {
		assert.False(t, call.status == http.StatusOK && call.msg.Error == nil, "tools/call deploy with token %s ran", token)
	}
	who := post("tools/call", `{"name":"scopes","arguments":{}}`, "scopes")
	require.Equal(t, http.StatusOK, who.status)
	require.Nil(t, who.msg.Error)
	assert.Equal(t, map[bool]string{true: "mcp deploy", false: "mcp"}[want], callText(t, who.msg.Result), "the handler's principal")
}

// openScoped opens a 2025 session on e with token.
func openScoped(t *testing.T, e *e2e, token string) string {
	t.Helper()
	init := e.post(token, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+protocol.Version20251125+
		`","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`, nil)
	require.Equal(t, http.StatusOK, init.status)
	sid := init.header.Get("Mcp-Session-Id")
	require.NotEmpty(t, sid)
	in := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": protocol.Version20251125}
	require.Equal(t, http.StatusAccepted, e.post(token, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, in).status)
	return sid
}

// Behind the real guard, every check reads the principal of the request
// at hand: a session opened (or a replica's view made) with a token that
// holds deploy, then used with a token of the same principal that does
// not, neither lists nor calls deploy, and its handlers see the current
// token's scopes; in a session, a resumable session, a shared session
// (plain and resumable, the view made on the second replica by the full
// token) and stateless.
func TestEndToEndCurrentPrincipal(t *testing.T) {
	t.Parallel()
	store := func() streamable.Option { return streamable.WithEventStore(streamable.NewMemoryEventStore(0, 0)) }
	for _, mode := range []struct {
		name     string
		replicas func(t *testing.T) []*e2e
	}{
		{"session", func(t *testing.T) []*e2e { return newScopedReplicas(t, 1, nil) }},
		{"resumable", func(t *testing.T) []*e2e { return newScopedReplicas(t, 1, nil, store()) }},
		{"shared", func(t *testing.T) []*e2e {
			c := streamabletest.NewCluster()
			return newScopedReplicas(t, 2, func(name string) replication.Cluster { return c.Replica(name) })
		}},
		{"shared-resumable", func(t *testing.T) []*e2e {
			c := streamabletest.NewCluster()
			events := streamable.NewMemoryEventStore(0, 0) // the replicas' shared store
			return newScopedReplicas(t, 2, func(name string) replication.Cluster { return c.Replica(name) }, streamable.WithEventStore(events))
		}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			es := mode.replicas(t)
			first, last := es[0], es[len(es)-1]
			sid := openScoped(t, first, "full")
			checkScoped(t, last, sid, "full") // on another replica: its view is made by "full"
			checkScoped(t, last, sid, "less")
			checkScoped(t, first, sid, "less")
			checkScoped(t, last, sid, "full")
		})
	}
	t.Run("stateless", func(t *testing.T) {
		t.Parallel()
		e := newScopedReplicas(t, 1, nil)[0]
		checkScoped(t, e, "", "full")
		checkScoped(t, e, "", "less")
	})
}
