package oauth_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
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

// fwReplica is one replica of a service on a shared cluster: a server
// with a "deploy" task tool, behind the guard unless it is left out.
type fwReplica struct {
	*e2e
	verifier *fakeVerifier
}

func newFWReplica(t *testing.T, c *streamabletest.Cluster, name string, guarded bool, edit func(*oauth.Config)) *fwReplica {
	t.Helper()
	srv := server.New(server.WithMiddleware(auth.Middleware()), server.WithToolAccess(auth.ToolAccess),
		server.WithCallerKey(auth.CallerKey), server.WithTaskIDPrefix(name+"."))
	require.NoError(t, srv.AddTool(server.Tool{
		Name: "deploy", Scopes: []string{"deploy"},
		Execution: &server.ToolExecution{TaskSupport: server.TaskSupportOptional},
	}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		p, _ := auth.PrincipalFromContext(ctx)
		return server.Text("SECRET of " + p.Subject), nil
	}))
	v := &fakeVerifier{principals: map[string]*auth.Principal{
		"alice": {Issuer: "https://as.example.com", Subject: "alice", Scopes: []string{"mcp"}},
		"bob":   {Issuer: "https://as.example.com", Subject: "bob", Scopes: []string{"mcp", "deploy"}},
	}}
	reg := prometheus.NewPedanticRegistry()
	cfg := oauth.Config{
		Resource: "https://mcp.example.com/mcp", AuthorizationServers: []string{"https://as.example.com"}, Verifier: v,
		Scopes: []string{"mcp"}, Tools: srv, Registerer: reg,
	}
	if edit != nil {
		edit(&cfg)
	}
	rs, err := oauth.New(cfg)
	require.NoError(t, err)
	opts := []streamable.Option{streamable.WithPrincipal(auth.SessionPrincipal), streamable.WithCluster(replication.Config{Cluster: c.Replica(name)})}
	var ep *streamable.Endpoint
	var h http.Handler
	if guarded {
		ep, h = rs.Endpoint(srv, opts...)
	} else {
		ep = streamable.New(srv, opts...)
		h = ep
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ts := httptest.NewServer(mux)
	t.Cleanup(func() {
		_ = ep.Close()
		ts.CloseClientConnections()
		ts.Close()
		_ = srv.Close()
	})
	return &fwReplica{e2e: &e2e{t: t, url: ts.URL, reg: reg}, verifier: v}
}

// TestForwardedTaskRequestsCarryThePrincipal: replicas a and b of one
// service. Bob's task runs on a; his tasks/get reaching b is forwarded to
// a without his token, which a does not verify again: a serves it as Bob's
// (his task, his result) by the assertion b made; Alice's, as Alice's (an
// unknown task). The task's replica still checks every scope against the
// asserted principal (c needs a scope Bob lacks), and refuses, counted, a
// forwarded request without an assertion (d has no guard, so it asserts
// nothing) or with one made for another resource (e's).
func TestForwardedTaskRequestsCarryThePrincipal(t *testing.T) {
	t.Parallel()
	cluster := streamabletest.NewCluster()
	a := newFWReplica(t, cluster, "a", true, nil)
	b := newFWReplica(t, cluster, "b", true, nil)
	c := newFWReplica(t, cluster, "c", true, func(cfg *oauth.Config) { cfg.Scopes = []string{"mcp", "audit"} })
	d := newFWReplica(t, cluster, "d", false, nil)
	e := newFWReplica(t, cluster, "e", true, func(cfg *oauth.Config) { cfg.Resource = "https://other.example.com/mcp" })

	meta, hdr := tasksMeta2026, headers2026
	created := a.post("bob", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy",`+meta+`}}`, hdr("tools/call", "deploy"))
	require.Equal(t, http.StatusOK, created.status)
	require.Nil(t, created.msg.Error)
	var task struct {
		TaskID string `json:"taskId"`
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal(created.msg.Result, &task), "%s", created.msg.Result)
	id := task.TaskID
	require.Regexp(t, `^a\.`, id)
	get := func(id string) string {
		return `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"` + id + `",` + meta + `}}`
	}
	for task.Status != "completed" { // the handler returns at once: poll a until it is done
		r := a.post("bob", get(id), hdr("tasks/get", id))
		require.Nil(t, r.msg.Error)
		require.NoError(t, json.Unmarshal(r.msg.Result, &task))
	}

	verified := a.verifier.calls.Load()
	r := b.post("bob", get(id), hdr("tasks/get", id))
	require.Equal(t, http.StatusOK, r.status)
	require.Nil(t, r.msg.Error, "%+v", r.msg.Error)
	assert.Contains(t, string(r.msg.Result), "SECRET of bob", "Bob's task, through b")
	assert.Equal(t, verified, a.verifier.calls.Load(), "a verified no token: the request carried none")

	r = b.post("alice", get(id), hdr("tasks/get", id))
	require.NotNil(t, r.msg.Error, "%s", r.msg.Result)
	assert.Equal(t, int64(protocol.CodeInvalidParams), r.msg.Error.Code)
	assert.Contains(t, r.msg.Error.Message, "unknown task", "Bob's task is not Alice's, through b either")
	assert.NotContains(t, string(r.msg.Result), "SECRET")

	r = b.post("bob", get("c.x"), hdr("tasks/get", "c.x"))
	assert.Equal(t, http.StatusForbidden, r.status, "c checks its scopes against Bob's assertion")
	assert.Contains(t, r.header.Get("WWW-Authenticate"), `error="insufficient_scope"`)
	assert.InDelta(t, 1, c.failures(oauth.ReasonInsufficientScope), 0)

	r = d.post("bob", get(id), hdr("tasks/get", id))
	assert.Equal(t, http.StatusUnauthorized, r.status, "no assertion: refused, not served as nobody")
	assert.NotContains(t, string(r.msg.Result), "SECRET")
	assert.InDelta(t, 1, a.failures(oauth.ReasonMissingToken), 0)

	r = e.post("bob", get(id), hdr("tasks/get", id))
	assert.Equal(t, http.StatusUnauthorized, r.status, "an assertion for another resource")
	assert.NotContains(t, string(r.msg.Result), "SECRET")
	assert.InDelta(t, 1, a.failures(oauth.ReasonWrongAudience), 0)
	assert.Zero(t, b.failures(oauth.ReasonMissingToken)+b.failures(oauth.ReasonInsufficientScope), "b refused nothing itself")
}
