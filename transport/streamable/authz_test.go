package streamable_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// The authorization tests (helpers start with "az") stand a header in for a
// token: azGuard puts the scopes of X-Scopes into each HTTP request's
// context, as an authorization guard puts its principal, and azAccess (the
// server's WithToolAccess) reads them from the request's arrival context.
// Every request is the same principal's ("alice", the session binding's
// key), so that a session accepts a token with fewer scopes.

type azScopesKey struct{}

// azGuard serves next with the scopes of X-Scopes in the request context.
func azGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scopes := strings.Fields(r.Header.Get("X-Scopes"))
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), azScopesKey{}, scopes)))
	})
}

// azAccess lets req use t when its arrival context holds t's scopes; a
// request without scopes in its context may use nothing (fail closed).
func azAccess(req *server.Request, t *server.Tool) bool {
	have, ok := req.ArrivalContext().Value(azScopesKey{}).([]string)
	if !ok {
		return false
	}
	for _, s := range t.Scopes {
		if !slices.Contains(have, s) {
			return false
		}
	}
	return true
}

// azOptions bind each session to the one principal of these tests.
func azOptions() []streamable.Option {
	return []streamable.Option{streamable.WithPrincipal(func(*http.Request) string { return "alice" })}
}

// azServer is htServer with azAccess and a tool "deploy" that needs the
// scope deploy.
func azServer(t *testing.T) *server.Server {
	srv := htServer(t, server.WithToolAccess(azAccess))
	require.NoError(t, srv.AddTool(server.Tool{Name: "deploy", Scopes: []string{"deploy"}}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("deployed"), nil
	}))
	return srv
}

// azWrap serves e's Endpoint behind azGuard.
func azWrap(t *testing.T, e *htEnv) *htEnv {
	t.Helper()
	ts := httptest.NewServer(azGuard(e.h))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	e.ts, e.client = ts, ts.Client()
	return e
}

// azInitialize opens a session with a token of scopes.
func azInitialize(t *testing.T, e *htEnv, scopes string) string {
	t.Helper()
	r := e.do(http.MethodPost, htInitBody(`{}`), htH{"X-Scopes": scopes})
	require.Equal(t, http.StatusOK, r.status, "initialize: %s", r.body)
	sid := r.header.Get("Mcp-Session-Id")
	require.NotEmpty(t, sid)
	hdr := htSession(sid)
	hdr["X-Scopes"] = scopes
	n := e.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)
	require.Equal(t, http.StatusAccepted, n.status, "initialized: %s", n.body)
	return sid
}

// azIDs numbers the requests of azSees.
var azIDs atomic.Int64

// azSees checks what a request of session sid (stateless when sid is "")
// with a token of scopes sees of deploy: listed and callable, or neither.
func azSees(t *testing.T, e *htEnv, sid, scopes string, want bool) {
	t.Helper()
	post := func(method, params, name string) htMsg {
		// unique in the session: a resumable stream outlives its answer
		id := int(azIDs.Add(1))
		hdr := htSLHeaders(method, name)
		body := htSL(id, method, params, htMeta26)
		if sid != "" {
			hdr, body = htSession(sid), `{"jsonrpc":"2.0","id":`+strconv.Itoa(id)+`,"method":"`+method+`","params":`+params+`}`
		}
		hdr["X-Scopes"] = scopes
		r := e.do(http.MethodPost, body, hdr)
		// A stateless request's error is 400 (see the 2026-07-28 era).
		require.Contains(t, []int{http.StatusOK, http.StatusBadRequest}, r.status, "%s: %s", method, r.body)
		msgs := r.messages(t)
		require.NotEmpty(t, msgs, "%s", r.body)
		return msgs[len(msgs)-1]
	}
	list := post("tools/list", `{}`, "")
	require.Nil(t, list.Error, "tools/list: %v", list.Error)
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(list.Result, &res))
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	assert.Equal(t, want, slices.Contains(names, "deploy"), "scopes %q: tools/list shows deploy: %v", scopes, names)
	assert.Contains(t, names, "echo")

	call := post("tools/call", `{"name":"deploy","arguments":{}}`, "deploy")
	if want {
		require.Nil(t, call.Error, "scopes %q: tools/call deploy: %v", scopes, call.Error)
		assert.Contains(t, string(call.Result), "deployed")
	} else {
		require.NotNil(t, call.Error, "scopes %q: tools/call deploy ran: %s", scopes, call.Result)
		assert.Equal(t, int64(-32602), call.Error.Code, "answered as an unknown tool")
	}
}

// The scopes every check reads are those of the request at hand, not of
// the request that opened the session, made a replica's view of it or
// came first: a session opened with the scope deploy and then used with a
// token of the same principal without it neither lists nor calls deploy,
// in a session, a resumable session, a shared session on any replica
// (plain and resumable, in memory and on Redis), and stateless.
func TestToolAccessReadsCurrentRequest(t *testing.T) {
	t.Run("session", func(t *testing.T) {
		e := azWrap(t, newHTEnv(t, azServer(t), azOptions()...))
		sid := azInitialize(t, e, "deploy")
		azSees(t, e, sid, "deploy", true)
		azSees(t, e, sid, "", false)
		azSees(t, e, sid, "deploy", true)
	})
	t.Run("resumable", func(t *testing.T) {
		opts := append(azOptions(), streamable.WithEventStore(streamable.NewMemoryEventStore(0, 0)))
		e := azWrap(t, newHTEnv(t, azServer(t), opts...))
		sid := azInitialize(t, e, "deploy")
		azSees(t, e, sid, "deploy", true)
		azSees(t, e, sid, "", false)
		azSees(t, e, sid, "deploy", true)
	})
	t.Run("stateless", func(t *testing.T) {
		e := azWrap(t, newHTEnv(t, azServer(t), azOptions()...))
		azSees(t, e, "", "deploy", true)
		azSees(t, e, "", "", false)
	})
	shEach(t, func(t *testing.T, be shBackend) {
		for _, resumable := range []bool{false, true} {
			t.Run(map[bool]string{false: "shared", true: "shared-resumable"}[resumable], func(t *testing.T) {
				opts := azOptions()
				if resumable {
					opts = append(opts, streamable.WithEventStore(be.events(t)))
				}
				var envs []*htEnv
				for _, name := range []string{"a", "b"} {
					o := append([]streamable.Option{streamable.WithCluster(replication.Config{Cluster: be.replica(t, name)})}, opts...)
					envs = append(envs, azWrap(t, newHTEnv(t, azServer(t), o...)))
				}
				a, b := envs[0], envs[1]
				sid := azInitialize(t, a, "deploy")
				azSees(t, b, sid, "deploy", true) // b's view is made by a request with deploy
				azSees(t, b, sid, "", false)
				azSees(t, a, sid, "", false)
				azSees(t, b, sid, "deploy", true)
			})
		}
	})
}

// A RelayClient that is a request (or a batch) is refused and counted,
// never run in the session: whoever can publish to the cluster (a forged
// relay, a buggy replica) cannot run a tool in another's session. A
// response and a notification still pass.
func TestSharedRelayedRequestRefused(t *testing.T) {
	shEach(t, func(t *testing.T, be shBackend) {
		refused := make(chan string, 8)
		rs := newSHReplicasWith(t, be, 1, replication.Config{OnRelayRefused: func(reason string) { refused <- reason }})
		a := rs.envs[0]
		sid := a.initialize(`{}`)
		rogue := be.replica(t, "x") // a member of the cluster that is no Endpoint
		for _, data := range []string{
			htCallBody("99", "block", `{}`),
			`[` + htCallBody("98", "block", `{}`) + `]`,
			`{"jsonrpc":"2.0","id":97,"method":"ping"}`,
		} {
			require.NoError(t, rogue.Publish(t.Context(), sid, replication.Relay{Kind: replication.RelayClient, From: "x", Data: []byte(data)}))
			assert.Equal(t, "request", <-refused, "%s", data)
		}
		select {
		case <-rs.blocker.started:
			t.Fatal("a relayed tools/call ran")
		default:
		}

		// A response to no pending request and a notification are taken
		// (and ignored): not refused.
		for _, data := range []string{
			`{"jsonrpc":"2.0","id":"a-1","result":{}}`,
			`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`,
		} {
			require.NoError(t, rogue.Publish(t.Context(), sid, replication.Relay{Kind: replication.RelayClient, From: "x", Data: []byte(data)}))
		}
		require.NoError(t, rogue.Publish(t.Context(), sid, replication.Relay{Kind: replication.RelayClient, From: "x", Data: []byte(htCallBody("96", "block", `{}`))}))
		assert.Equal(t, "request", <-refused, "the relays before it were taken, not refused")
		select {
		case r := <-refused:
			t.Fatalf("refused again: %s", r)
		default:
		}
		_, msgs := a.call(sid, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		require.Len(t, msgs, 1)
		assert.Nil(t, msgs[0].Error, "the session serves on")
	})
}
