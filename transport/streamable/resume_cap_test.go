package streamable_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/redisstore"
	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// holdTool reports progress once, then holds until released or cancelled.
type holdTool struct {
	started chan struct{}
	release chan struct{}
}

func newHoldTool() *holdTool {
	return &holdTool{started: make(chan struct{}, 16), release: make(chan struct{})}
}

func (h *holdTool) call(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
	_ = server.ReportProgress(ctx, 1, 0, "")
	h.started <- struct{}{}
	select {
	case <-h.release:
		return server.Text("done"), nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func holdServer(t *testing.T, h *holdTool) *server.Server {
	t.Helper()
	srv := server.New(server.WithProgressInterval(0))
	require.NoError(t, srv.AddTool(server.Tool{Name: "hold", Description: "hold"}, h.call))
	return srv
}

// rejectRecorder collects the Endpoint's reject reasons.
func rejectRecorder() (chan protocol.RejectReason, streamable.Option) {
	got := make(chan protocol.RejectReason, 64)
	return got, streamable.WithRejectHook(func(r protocol.RejectReason) {
		select {
		case got <- r:
		default:
		}
	})
}

// testResumeCap runs the cap on concurrent GETs of one session: calls
// start on a, their clients leave after the priming event, and b (a
// itself, or another replica) carries their resumptions. rejects are b's.
func testResumeCap(t *testing.T, a, b *rsEnv, hold *holdTool, rejects chan protocol.RejectReason) {
	const calls = 5 // one more than the cap
	sid := a.initialize()
	ids := make([]string, calls)
	for i := range calls {
		ctx, leave := context.WithCancel(t.Context())
		n := strconv.Itoa(i + 1)
		post := a.do(ctx, http.MethodPost, `{"jsonrpc":"2.0","id":`+n+`,"method":"tools/call","params":{"name":"hold","arguments":{},"_meta":{"progressToken":"t`+n+`"}}}`, rsSession(sid))
		sse := rsStream(t, post)
		ev := sse.event()
		require.True(t, ev.hasID, "a priming event")
		ids[i] = ev.id
		<-hold.started
		leave()
		_ = post.Body.Close()
		a.waitClosed(post) // the request runs on, its stream detached
	}

	type carried struct {
		resp  rsResp
		sse   *rsSSE
		leave context.CancelFunc
	}
	resume := func(i int) carried {
		ctx, leave := context.WithCancel(t.Context())
		resp := b.resume(ctx, sid, ids[i])
		sse := rsStream(t, resp)
		assert.Equal(t, "progress 1", summary(t, sse.event()), "resumption %d replays what its client missed", i)
		return carried{resp, sse, leave}
	}
	open := make([]carried, 0, calls)
	for i := range streamable.DefaultMaxResumptions {
		open = append(open, resume(i))
	}

	// One more stream is refused, and counted.
	over := b.resume(t.Context(), sid, ids[calls-1])
	_ = over.Body.Close()
	assert.Equal(t, http.StatusTooManyRequests, over.StatusCode)
	assert.NotEmpty(t, over.Header.Get("Retry-After"))
	assert.Equal(t, protocol.RejectInFlightLimit, <-rejects)

	// A resumption of a stream already carried takes it over: not counted
	// twice, and the older one ends.
	again := resume(0)
	open[0].sse.end()
	_ = open[0].resp.Body.Close()
	open[0] = again

	// Once a client leaves, its place is free.
	open[1].leave()
	_ = open[1].resp.Body.Close()
	b.waitClosed(open[1].resp)
	open[1] = resume(calls - 1)

	close(hold.release)
	for _, c := range open {
		ev := c.sse.event()
		assert.Contains(t, summary(t, ev), "result", "the carried streams end with their answers")
		c.leave()
		_ = c.resp.Body.Close()
	}
	select {
	case r := <-rejects:
		t.Errorf("unexpected refusal %v", r)
	default:
	}
}

// One session has at most DefaultMaxResumptions GET streams open at once:
// one more is refused with 429 and Retry-After, a resumption of a stream
// already carried takes it over, and a place freed is taken again.
func TestResumptionsCappedPerSession(t *testing.T) {
	hold := newHoldTool()
	rejects, hook := rejectRecorder()
	e := newRSEnv(t, holdServer(t, hold), hook, streamable.WithEventStore(streamable.NewMemoryEventStore(0, 0)))
	testResumeCap(t, e, e, hold, rejects)
}

// In shared mode on a real Redis, the resumptions one replica carries of
// streams another replica serves (each polling the store) are capped the
// same way, and a newer resumption of one stream ends the older one.
func TestSharedResumptionsCappedPerSession(t *testing.T) {
	redis := redistest.Start(t)
	store := func(name string) *redisstore.Store {
		st, err := redisstore.New(t.Context(), redis.Client(t), redisstore.WithClusterKey(redistest.ClusterKey(), nil), redisstore.WithReplica(name))
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		require.NoError(t, st.RenewLease(t.Context(), 0), "a live replica holds its lease")
		return st
	}
	events := store("events")
	hold := newHoldTool()
	a := newRSEnv(t, holdServer(t, hold), streamable.WithCluster(replication.Config{Cluster: store("a")}), streamable.WithEventStore(redisEvents{events}))
	rejects, hook := rejectRecorder()
	b := newRSEnv(t, holdServer(t, hold), hook, streamable.WithCluster(replication.Config{Cluster: store("b")}), streamable.WithEventStore(redisEvents{events}))
	testResumeCap(t, a, b, hold, rejects)
}
