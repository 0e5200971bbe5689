package streamable_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/redisstore"
	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/internal/streamabletest"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// The shared-mode tests (helpers start with "sh") run several replicas in
// one process: each its own server and Endpoint, on one in-memory cluster
// (streamabletest.Cluster) and, where resumability is tested, one event
// store, as replicas behind a load balancer share Redis. Which replica
// serves a request is the test's choice.

// shBackend makes the cluster of each replica, and the event store they
// share: in memory, or on a real redis-server.
type shBackend struct {
	name    string
	memory  *streamabletest.Cluster // nil for Redis
	replica func(t *testing.T, name string) replication.Cluster
	events  func(t *testing.T) streamable.EventStore
	down    func(down bool)   // the store goes away, or comes back
	redis   *redistest.Server // nil in memory
}

// shEach runs f on each backend: in memory, and on a redis-server of its
// own.
func shEach(t *testing.T, f func(t *testing.T, b shBackend)) {
	t.Run("memory", func(t *testing.T) { f(t, shMemory()) })
	t.Run("redis", func(t *testing.T) {
		redis := redistest.Start(t)
		store := func(t *testing.T, name string) *redisstore.Store {
			t.Helper()
			st, err := redisstore.New(t.Context(), redis.Client(t), redisstore.WithClusterKey(redistest.ClusterKey(), nil), redisstore.WithReplica(name))
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			require.NoError(t, st.RenewLease(t.Context(), time.Minute), "a live replica holds its lease")
			return st
		}
		f(t, shBackend{
			name:    "redis",
			redis:   redis,
			replica: func(t *testing.T, name string) replication.Cluster { return store(t, name) },
			events:  func(t *testing.T) streamable.EventStore { return redisEvents{store(t, "events")} },
			down: func(down bool) {
				if down {
					redis.Stop()
				} else {
					redis.Restart()
				}
			},
		})
	})
}

// shMemory is the in-memory backend, on a cluster of its own.
func shMemory() shBackend {
	c := streamabletest.NewCluster()
	return shBackend{
		name: "memory", memory: c,
		replica: func(_ *testing.T, name string) replication.Cluster { return c.Replica(name) },
		events:  func(*testing.T) streamable.EventStore { return streamable.NewMemoryEventStore(0, 0) },
		down:    c.SetDown,
	}
}

// shReplicas is a set of replicas of one service.
type shReplicas struct {
	cluster *streamabletest.Cluster // nil on Redis
	envs    []*htEnv
	blocker *htBlocker          // the "block" tool of every replica
	asked   chan string         // the "ask" tool's elicitation answers, "error: ..." on failure
	started chan string         // the "ask" tool's replica, when it starts
	ended   chan server.Outcome // the outcomes of "block" calls, sealed (the first 8)
}

// newSHReplicas starts n replicas named a, b, c, ... with opts.
func newSHReplicas(t *testing.T, b shBackend, n int, opts ...streamable.Option) *shReplicas {
	t.Helper()
	return newSHReplicasWith(t, b, n, replication.Config{}, opts...)
}

// newSHReplicasWith starts n replicas named a, b, c, ... with opts, each
// sharing its sessions through cfg with the replica's Cluster.
func newSHReplicasWith(t *testing.T, b shBackend, n int, cfg replication.Config, opts ...streamable.Option) *shReplicas {
	t.Helper()
	rs := &shReplicas{cluster: b.memory, blocker: newHTBlocker(), asked: make(chan string, 8), started: make(chan string, 8), ended: make(chan server.Outcome, 8)}
	for i := range n {
		name := string(rune('a' + i))
		srv := htServer(t, server.WithMiddleware(func(next server.Handler) server.Handler {
			return func(ctx context.Context, req *server.Request) (any, error) {
				if req.Method == "tools/call" {
					serverhook.Of[server.Outcome](ctx).OnDone(func(out server.Outcome) {
						select {
						case rs.ended <- out:
						default:
						}
					})
				}
				return next(ctx, req)
			}
		}))
		require.NoError(t, srv.AddTool(server.Tool{Name: "block"}, rs.blocker.tool))
		require.NoError(t, srv.AddTool(server.Tool{Name: "ask"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			rs.started <- name
			res, err := server.Elicit(ctx, &server.ElicitParams{Message: "name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)})
			if err != nil {
				rs.asked <- "error: " + err.Error()
				return nil, err
			}
			rs.asked <- name + ":" + res.Action
			return server.Text(res.Action), nil
		}))
		require.NoError(t, srv.AddResource(server.Resource{URI: "file:///x", Name: "x"}, func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
			return nil, server.ErrResourceNotFound
		}))
		cfg.Cluster = b.replica(t, name)
		o := append([]streamable.Option{streamable.WithCluster(cfg)}, opts...)
		rs.envs = append(rs.envs, newHTEnv(t, srv, o...))
	}
	return rs
}

// TestSharedSessionAnyReplica: a session initialized on one replica is
// served by every other, its DELETE on one ends it on all, and a replica
// that never saw it loads it from the cluster.
func TestSharedSessionAnyReplica(t *testing.T) {
	shEach(t, func(t *testing.T, be shBackend) {
		rs := newSHReplicas(t, be, 3)
		a, b, c := rs.envs[0], rs.envs[1], rs.envs[2]
		sid := a.initialize(`{}`)
		if rs.cluster != nil {
			assert.Equal(t, 1, rs.cluster.Sessions())
		}

		for i, e := range []*htEnv{b, c, a, c} {
			ct, msgs := e.call(sid, htCallBody("1"+string(rune('0'+i)), "echo", `{"text":"hi"}`))
			assert.Equal(t, "application/json", ct)
			require.Len(t, msgs, 1)
			require.Nil(t, msgs[0].Error, "replica %d: %s", i, msgs[0].Error)
			assert.JSONEq(t, `{"content":[{"type":"text","text":"hi"}]}`, string(msgs[0].Result))
		}
		// ping is answered only once initialize completed: the state came along.
		_, msgs := c.call(sid, `{"jsonrpc":"2.0","id":20,"method":"ping"}`)
		require.Nil(t, msgs[0].Error)

		del := b.do(http.MethodDelete, "", htSession(sid))
		require.Equal(t, http.StatusNoContent, del.status, "%s", del.body)
		if rs.cluster != nil {
			assert.Equal(t, 0, rs.cluster.Sessions())
		}
		// Every replica refuses the session at once: the DELETE was
		// answered once the others had dropped their views.
		for i, e := range []*htEnv{a, c, b} {
			r := e.do(http.MethodPost, htCallBody("3"+string(rune('0'+i)), "echo", `{"text":"x"}`), htSession(sid))
			htUnknownSession(t, r)
		}
		if rs.cluster != nil {
			assert.Equal(t, 2, rs.cluster.Relayed(replication.RelayEndSeen), "a and c answered the end")
		}
	})
}

// TestSharedDeleteReadYourWrites: a replica answers a DELETE only once
// every other replica holding a view of the session dropped it, so that
// the client's next request, wherever it lands, is refused. Here a's
// relays are late: b holds its answer until they arrive.
func TestSharedDeleteReadYourWrites(t *testing.T) {
	a, sid, r := shAnsweredAfterRelay(t, http.MethodDelete, "", replication.RelayEnd)
	require.Equal(t, http.StatusNoContent, r.status, "%s", r.body)
	r = a.do(http.MethodPost, htCallBody("2", "echo", `{"text":"x"}`), htSession(sid))
	htUnknownSession(t, r)
}

// shAnsweredAfterRelay starts replicas a and b of a session that both hold
// a view of, posts method and body for the session to b while a's relays
// are held back, and fails unless b's answer waits for a relay of kind to
// reach a; then it lets a's relays go, and returns a, the session and b's
// answer.
func shAnsweredAfterRelay(t *testing.T, method, body string, kind replication.RelayKind) (*htEnv, string, htReply) {
	t.Helper()
	rs := newSHReplicas(t, shMemory(), 2)
	a, b := rs.envs[0], rs.envs[1]
	sid := a.initialize(`{}`)
	_, msgs := b.call(sid, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	require.Nil(t, msgs[0].Error, "b holds a view too")
	held, release := rs.cluster.HoldRelays("a")
	defer release()

	answered := make(chan htReply, 1)
	go func() { answered <- b.do(method, body, htSession(sid)) }()
	for rel := range held {
		if rel.Kind == kind {
			break
		}
	}
	select {
	case r := <-answered:
		t.Fatalf("b answered (%d) before a's relays came", r.status)
	default:
	}
	release()
	return a, sid, <-answered
}

// TestSharedElicitationAnsweredElsewhere: a handler on replica a asks the
// client; the client's answer, posted to b, reaches a's handler.
func TestSharedElicitationAnsweredElsewhere(t *testing.T) {
	shEach(t, func(t *testing.T, be shBackend) {
		rs := newSHReplicas(t, be, 2)
		a, b := rs.envs[0], rs.envs[1]
		sid := a.initialize(`{"elicitation":{}}`)

		resp := a.send(a.request(t.Context(), http.MethodPost, htCallBody("1", "ask", `{}`), htSession(sid)))
		defer func() { _ = resp.Body.Close() }()
		stream := htStream(t, resp)
		ask := stream.nextMsg()
		require.Equal(t, "elicitation/create", ask.Method)
		var id string
		require.NoError(t, json.Unmarshal(ask.ID, &id), "a shared session's server request ids are strings: %s", ask.ID)
		assert.True(t, strings.HasPrefix(id, "a-"), "the id names the replica: %s", id)

		answer := `{"jsonrpc":"2.0","id":` + string(ask.ID) + `,"result":{"action":"decline"}}`
		r := b.do(http.MethodPost, answer, htSession(sid))
		require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
		assert.Equal(t, "a:decline", <-rs.asked)
		final := stream.nextMsg()
		require.Nil(t, final.Error)
		assert.Contains(t, string(final.Result), "decline")
	})
}

// TestSharedCancelAndDeleteElsewhere: notifications/cancelled posted to b
// cancels a's handler as the client's cancel; a DELETE posted to b cancels
// a's handler as the transport's close.
func TestSharedCancelAndDeleteElsewhere(t *testing.T) {
	shEach(t, func(t *testing.T, be shBackend) {
		for _, resumable := range []bool{false, true} {
			t.Run(map[bool]string{false: "plain", true: "resumable"}[resumable], func(t *testing.T) {
				var opts []streamable.Option
				if resumable { // the handler runs on a goroutine of its own
					opts = append(opts, streamable.WithEventStore(be.events(t)))
				}
				sharedCancelAndDelete(t, newSHReplicas(t, be, 2, opts...))
			})
		}
	})
}

// sharedCancelAndDelete checks cancel and DELETE posted to b for calls on a.
func sharedCancelAndDelete(t *testing.T, rs *shReplicas) {
	a, b := rs.envs[0], rs.envs[1]
	sid := a.initialize(`{}`)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan htReply, 1)
	go func() {
		done <- a.doReq(a.request(ctx, http.MethodPost, htCallBody("7", "block", `{}`), htSession(sid)))
	}()
	<-rs.blocker.started
	r := b.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"changed my mind"}}`, htSession(sid))
	require.Equal(t, http.StatusAccepted, r.status)
	cause := <-rs.blocker.cause
	require.ErrorIs(t, cause, server.ErrClientCancel, "cause: %v", cause)
	<-done

	go func() {
		done <- a.doReq(a.request(ctx, http.MethodPost, htCallBody("8", "block", `{}`), htSession(sid)))
	}()
	<-rs.blocker.started
	r = b.do(http.MethodDelete, "", htSession(sid))
	require.Equal(t, http.StatusNoContent, r.status)
	cause = <-rs.blocker.cause
	assert.ErrorIs(t, cause, server.ErrTransportClose, "cause: %v", cause)
	<-done
}

// TestSharedStandaloneStreamElsewhere: the client's GET stream is on c;
// a list_changed that replica a's server sends the session arrives there.
func TestSharedStandaloneStreamElsewhere(t *testing.T) {
	shEach(t, func(t *testing.T, be shBackend) {
		for _, resumable := range []bool{false, true} {
			name := "plain"
			var opts []streamable.Option
			if resumable {
				name = "resumable"
				opts = append(opts, streamable.WithEventStore(be.events(t)))
			}
			t.Run(name, func(t *testing.T) {
				rs := newSHReplicas(t, be, 3, opts...)
				a, c := rs.envs[0], rs.envs[2]
				sid := a.initialize(`{}`)
				resp := c.send(c.request(t.Context(), http.MethodGet, "", htSession(sid)))
				defer func() { _ = resp.Body.Close() }()
				stream := htStream(t, resp)
				// a holds a view (it initialized the session): adding a tool
				// there tells the session, whose GET stream c carries.
				require.NoError(t, a.srv.AddTool(server.Tool{Name: "late"}, htCountTool))
				m := stream.nextMsg()
				assert.Equal(t, "notifications/tools/list_changed", m.Method)
				if rs.cluster != nil {
					assert.GreaterOrEqual(t, rs.cluster.Relayed(replication.RelayStandalone), 1)
				}
			})
		}
	})
}

// TestSharedStateFollows: a subscription and a log level set through one
// replica hold on the others, live views included.
func TestSharedStateFollows(t *testing.T) {
	shEach(t, func(t *testing.T, be shBackend) {
		rs := newSHReplicas(t, be, 2)
		a, b := rs.envs[0], rs.envs[1]
		sid := a.initialize(`{}`)
		_, msgs := b.call(sid, `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"error"}}`)
		require.Nil(t, msgs[0].Error, "%v", msgs[0].Error)
		require.Eventually(t, func() bool {
			for _, ss := range a.srv.Sessions() {
				if ss.ID() == sid {
					return true
				}
			}
			return false
		}, 5*time.Second, time.Millisecond, "a keeps its view")
		state := func(e *htEnv) []string {
			for _, ss := range e.srv.Sessions() {
				if ss.ID() == sid {
					return ss.Subscriptions()
				}
			}
			return nil
		}
		assert.Empty(t, state(a))
		_, msgs = b.call(sid, `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"file:///x"}}`)
		require.Nil(t, msgs[0].Error, "%v", msgs[0].Error)
		assert.Len(t, state(a), 1, "a's live view applied b's change before b answered")
		// A replica that loads the session later reads it from the record.
		c := newHTEnv(t, htServer(t), streamable.WithCluster(replication.Config{Cluster: be.replica(t, "c")}))
		_, msgs = c.call(sid, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
		require.Nil(t, msgs[0].Error)
		assert.Equal(t, []string{"file:///x"}, state(c))
	})
}

// TestSharedStateReadYourWrites: a replica answers a request that changed
// the session's state only once every other replica holding a view of the
// session applied it, so that the client's next request, wherever it
// lands, sees the change. Here a's relays are late: b holds its answer
// until they arrive.
func TestSharedStateReadYourWrites(t *testing.T) {
	a, sid, r := shAnsweredAfterRelay(t, http.MethodPost,
		`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"file:///x"}}`, replication.RelayState)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var subs []string
	for _, ss := range a.srv.Sessions() {
		if ss.ID() == sid {
			subs = ss.Subscriptions()
		}
	}
	assert.Equal(t, []string{"file:///x"}, subs, "a applied the state before b answered")
}

// TestSharedViewEvictedSessionGoesOn: a replica lets an idle view go; the
// session lives on in the cluster, and the replica loads it again.
func TestSharedViewEvictedSessionGoesOn(t *testing.T) {
	cluster := streamabletest.NewCluster()
	srv := htServer(t)
	e := newHTEnv(t, srv, streamable.WithCluster(replication.Config{Cluster: cluster.Replica("a"), ViewIdle: 20 * time.Millisecond}))
	sid := e.initialize(`{}`)
	require.Eventually(t, func() bool { return len(srv.Sessions()) == 0 }, 5*time.Second, 5*time.Millisecond, "the idle view is evicted")
	assert.Equal(t, 1, cluster.Sessions(), "the session goes on")
	loads := cluster.Loads()
	_, msgs := e.call(sid, htCallBody("1", "echo", `{"text":"back"}`))
	require.Nil(t, msgs[0].Error)
	assert.Equal(t, loads+2, cluster.Loads(), "loaded again: to check it, then its state once its relays come (followState)")
}

// TestSharedClusterDown: a replica that cannot load a session answers 503
// with Retry-After; once the cluster is back, it serves it.
func TestSharedClusterDown(t *testing.T) {
	shEach(t, func(t *testing.T, be shBackend) {
		rs := newSHReplicas(t, be, 2)
		a, b := rs.envs[0], rs.envs[1]
		sid := a.initialize(`{}`)
		be.down(true)
		r := b.do(http.MethodPost, htCallBody("1", "echo", `{"text":"x"}`), htSession(sid))
		htRPCError(t, r, http.StatusServiceUnavailable, -32000)
		assert.Equal(t, "1", r.header.Get("Retry-After"))
		r = b.do(http.MethodPost, htInitBody(`{}`), nil)
		require.Equal(t, http.StatusServiceUnavailable, r.status, "no new session without the cluster")
		be.down(false)
		_, msgs := b.call(sid, htCallBody("2", "echo", `{"text":"y"}`))
		require.Nil(t, msgs[0].Error)
	})
}

// TestSharedResumeElsewhere: the client of a request on a leaves after the
// priming event; it resumes the stream on b, which sends what a stores
// from then on, up to the response.
func TestSharedResumeElsewhere(t *testing.T) {
	shEach(t, func(t *testing.T, be shBackend) {
		store := be.events(t)
		rs := newSHReplicas(t, be, 2, streamable.WithEventStore(store), streamable.WithResponseMode(streamable.ResponseSSE))
		a, b := rs.envs[0], rs.envs[1]
		sid := a.initialize(`{"elicitation":{}}`)

		ctx, cancel := context.WithCancel(t.Context())
		resp := a.send(a.request(ctx, http.MethodPost, htCallBody("1", "ask", `{}`), htSession(sid)))
		lastID := primingID(t, resp)
		require.Equal(t, "a", <-rs.started)
		cancel() // the client leaves a's stream
		_ = resp.Body.Close()

		get := b.request(t.Context(), http.MethodGet, "", htSession(sid))
		get.Header.Set("Last-Event-ID", lastID)
		gresp := b.send(get)
		defer func() { _ = gresp.Body.Close() }()
		stream := htStream(t, gresp)
		ask := stream.nextMsg()
		require.Equal(t, "elicitation/create", ask.Method, "the request a stored after the client left")
		r := b.do(http.MethodPost, `{"jsonrpc":"2.0","id":`+string(ask.ID)+`,"result":{"action":"accept","content":{}}}`, htSession(sid))
		require.Equal(t, http.StatusAccepted, r.status)
		final := stream.nextMsg()
		require.Nil(t, final.Error)
		assert.JSONEq(t, `1`, string(final.ID))
		assert.Equal(t, "a:accept", <-rs.asked)
		_, more := stream.next()
		assert.False(t, more, "the stream ends with the response")
	})
}

// primingID reads an SSE response up to its priming event and returns the
// event's id.
func primingID(t *testing.T, resp *http.Response) string {
	t.Helper()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	buf := make([]byte, 0, 256)
	one := make([]byte, 1)
	for {
		_, err := resp.Body.Read(one)
		if err != nil {
			require.NoError(t, errors.Join(err, errors.New("no priming event")))
		}
		buf = append(buf, one[0])
		if strings.HasSuffix(string(buf), "\n\n") {
			for line := range strings.SplitSeq(string(buf), "\n") {
				if id, ok := strings.CutPrefix(line, "id:"); ok {
					return strings.TrimSpace(id)
				}
			}
			buf = buf[:0]
		}
	}
}

// TestSharedRequestLost: replica a dies (its lease is gone) while a request
// of a session runs there; the client resumes the request's stream on b,
// and gets a "server instance lost" error for it, counted once although
// two resumptions looked (Leases, on real Redis).
func TestSharedRequestLost(t *testing.T) {
	redis := redistest.Start(t)
	stores := map[string]*redisstore.Store{}
	var lost atomic.Int64
	var envs []*htEnv
	blocker := newHTBlocker()
	for _, name := range []string{"a", "b", "c"} {
		st, err := redisstore.New(t.Context(), redis.Client(t), redisstore.WithClusterKey(redistest.ClusterKey(), nil), redisstore.WithReplica(name))
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		require.NoError(t, st.RenewLease(t.Context(), time.Minute))
		stores[name] = st
		srv := htServer(t)
		require.NoError(t, srv.AddTool(server.Tool{Name: "block"}, blocker.tool))
		envs = append(envs, newHTEnv(t, srv, streamable.WithCluster(replication.Config{Cluster: st, OnRequestLost: func() { lost.Add(1) }}),
			streamable.WithEventStore(redisEvents{st}), streamable.WithResponseMode(streamable.ResponseSSE)))
	}
	a, b, c := envs[0], envs[1], envs[2]
	sid := a.initialize(`{}`)

	ctx, cancel := context.WithCancel(t.Context())
	resp := a.send(a.request(ctx, http.MethodPost, htCallBody(`"q"`, "block", `{}`), htSession(sid)))
	lastID := primingID(t, resp)
	<-blocker.started
	cancel() // the client's connection to a breaks
	_ = resp.Body.Close()
	require.NoError(t, stores["a"].ReleaseLease(t.Context()), "a is gone: its lease expired")

	resume := func(e *htEnv) []htMsg {
		get := e.request(t.Context(), http.MethodGet, "", htSession(sid))
		get.Header.Set("Last-Event-ID", lastID)
		gresp := e.send(get)
		defer func() { _ = gresp.Body.Close() }()
		return htStream(t, gresp).rest()
	}
	for _, e := range []*htEnv{b, c} {
		msgs := resume(e)
		require.Len(t, msgs, 1)
		assert.JSONEq(t, `"q"`, string(msgs[0].ID))
		require.NotNil(t, msgs[0].Error)
		assert.Equal(t, int64(-32000), msgs[0].Error.Code)
		assert.Contains(t, msgs[0].Error.Message, "server instance lost")
	}
	assert.Equal(t, int64(1), lost.Load(), "counted once, by the replica that answered")
	// The session goes on at b.
	_, msgs := b.call(sid, htCallBody("2", "echo", `{"text":"still here"}`))
	require.Nil(t, msgs[0].Error)
}

// TestSharedDrainHandsStreamsBack: a replica leaving the cluster ends the
// HTTP response of the standalone stream it carries, which the client
// resumes on another replica; it refuses new requests with 503 (a load
// balancer tries another replica), and lets its running request finish:
// the client's answer, posted to another replica, reaches it.
func TestSharedDrainHandsStreamsBack(t *testing.T) {
	shEach(t, func(t *testing.T, be shBackend) {
		rs := newSHReplicas(t, be, 2, streamable.WithEventStore(be.events(t)), streamable.WithResponseMode(streamable.ResponseSSE))
		a, b := rs.envs[0], rs.envs[1]
		sid := a.initialize(`{"elicitation":{}}`)

		get := a.send(a.request(t.Context(), http.MethodGet, "", htSession(sid)))
		defer func() { _ = get.Body.Close() }()
		standalone := htStream(t, get)
		resp := a.send(a.request(t.Context(), http.MethodPost, htCallBody("1", "ask", `{}`), htSession(sid)))
		defer func() { _ = resp.Body.Close() }()
		stream := htStream(t, resp)
		ask := stream.nextMsg()
		require.Equal(t, "elicitation/create", ask.Method)

		a.h.Drain()
		_, more := standalone.next()
		assert.False(t, more, "the standalone stream's response ended")
		require.NotEmpty(t, standalone.lastID, "after an id to resume from")
		r := a.do(http.MethodPost, htCallBody("2", "echo", `{"text":"x"}`), htSession(sid))
		htRPCError(t, r, http.StatusServiceUnavailable, -32000)
		assert.Equal(t, "1", r.header.Get("Retry-After"))

		// The client resumes its standalone stream on b, and answers a's
		// question through b: a's handler finishes on a's stream.
		resume := b.request(t.Context(), http.MethodGet, "", htSession(sid))
		resume.Header.Set("Last-Event-ID", standalone.lastID)
		gresp := b.send(resume)
		defer func() { _ = gresp.Body.Close() }()
		require.Equal(t, http.StatusOK, gresp.StatusCode)
		r = b.do(http.MethodPost, `{"jsonrpc":"2.0","id":`+string(ask.ID)+`,"result":{"action":"accept","content":{}}}`, htSession(sid))
		require.Equal(t, http.StatusAccepted, r.status)
		assert.Equal(t, "a:accept", <-rs.asked)
		final := stream.nextMsg()
		require.Nil(t, final.Error)
		assert.JSONEq(t, `1`, string(final.ID))
	})
}

// TestSharedIdleSessionsHoldNoMemory: 10,000 sessions opened through a
// replica on Redis cost it nothing once idle: their views are evicted, and
// the replica's heap is back where it was (under 64 bytes a session, the
// noise of a collection, besides the nonce of each relay, which the Store
// remembers for its replay window), while every session goes on in Redis
// and is served again on its next request.
func TestSharedIdleSessionsHoldNoMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 10,000 sessions")
	}
	redis := redistest.Start(t)
	st, err := redisstore.New(t.Context(), redis.Client(t), redisstore.WithClusterKey(redistest.ClusterKey(), nil), redisstore.WithReplica("a"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	srv := htServer(t)
	e := newHTEnv(t, srv, streamable.WithCluster(replication.Config{Cluster: st, ViewIdle: 50 * time.Millisecond}), streamable.WithEventStore(redisEvents{st}), streamable.WithMaxSessions(20000))
	sid := e.initialize(`{}`) // a warm server: one session served
	_, _ = e.call(sid, htCallBody("1", "echo", `{"text":"warm"}`))
	require.Eventually(t, func() bool { return len(srv.Sessions()) == 0 }, 10*time.Second, 10*time.Millisecond)

	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	const n = 10000
	sids := make([]string, 0, n)
	for range n {
		r := e.do(http.MethodPost, htInitBody(`{}`), nil)
		require.Equal(t, http.StatusOK, r.status)
		sids = append(sids, r.header.Get("Mcp-Session-Id"))
	}
	open := len(srv.Sessions())
	require.Eventually(t, func() bool { return len(srv.Sessions()) == 0 }, 30*time.Second, 10*time.Millisecond, "idle views evicted")
	after := heap()
	perSession := (int64(after) - int64(before)) / n
	t.Logf("heap: %d before, %d after %d idle sessions (%d views while opening): %d bytes a session", before, after, n, open, perSession)
	assert.Less(t, perSession, int64(64+96), "bytes of heap per idle session, and the nonce of its state relay for the replay window")
	keys, err := redis.Client(t).DBSize(t.Context()).Result()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, keys, int64(n), "the sessions are in Redis")
	for _, i := range []int{0, n / 2, n - 1} {
		_, msgs := e.call(sids[i], htCallBody("2", "echo", `{"text":"back"}`))
		require.Nil(t, msgs[0].Error, "session %d", i)
	}
}

// redisEvents is a Redis store as an endpoint's event store, as package
// redisshare wires it.
type redisEvents struct{ *redisstore.Store }

func (s redisEvents) Replay(ctx context.Context, session, lastID string) (string, []streamable.Event, error) {
	stream, events, err := s.Store.Replay(ctx, session, lastID)
	return stream, replication.EventsAs[streamable.Event](events), err
}
